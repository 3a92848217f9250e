-- luagent.sandbox.defaults: what every sandbox.open starts from — the one
-- table sandbox.defaults is (a recipe may change it), in a leaf that the
-- facade (luagent.sandbox) and its helpers (the leftovers' rescue) share,
-- so no helper requires the facade.
return {
  image = "luagent-sandbox:latest", memory = "512m", cpus = 1, pids = 256, network = false,
  user = "1000:1000", workdir = "/workspace", tmp_size = "256m", workspace_size = "512m",
  timeout = 120, max_output = 1024 * 1024,
  -- how long bringing outputs home waits for a Docker engine that went away
  engine_grace = 30,
  -- how long an open waits for room when every engine is at its capacity
  -- (engines = {"URL#N", ...}; also sandbox.defaults.engines, LUAGENT_ENGINES)
  capacity_wait = 3600,
  -- what extract() and snapshot() may write on the host: a sandbox can make
  -- a terabyte sparse file for free
  max_extract = 2 * 1024 ^ 3, max_extract_entries = 20000,
}
