#!/bin/sh
# make demo: the energy-anomaly case study end to end. Starts the Docker
# engine if needed (as root), builds the sandbox image if missing (offline
# from the Debian mirror when no registry answers), runs the recipe. With
# OPENAI_API_KEY / ANTHROPIC_API_KEY / OPENAI_BASE_URL set, a real model
# drives it; otherwise the scripted driver does, and says so.
set -eu
cd "$(dirname "$0")/.."
tools/start-docker.sh
./luagent sandbox build
echo
./luagent run recipes/energy_anomaly.lua "$@"
