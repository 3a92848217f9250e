#!/usr/bin/env python3
"""Builds the tiny wheel the network tests install with pip, offline, with the standard library only.

usage: tests/wheel_build.py OUT_DIR     prints the wheel's path

The wheel is luagent-probe 1.0 (py3-none-any): one module, luagent_probe, whose hello() returns
"hello from luagent-probe", and a dist-info with METADATA, WHEEL and a RECORD of sha256 hashes
(PEP 427, PEP 376). Every zip entry has a fixed timestamp and mode, so the same source gives the
same bytes and the same sha256 on every run (the package index links it with #sha256=...).
"""
import base64
import hashlib
import os
import sys
import zipfile

NAME, VERSION = "luagent-probe", "1.0"
MODULE = "luagent_probe"
FILENAME = f"{MODULE}-{VERSION}-py3-none-any.whl"
DIST_INFO = f"{MODULE}-{VERSION}.dist-info"

FILES = [
    (f"{MODULE}/__init__.py",
     '"""A probe package for luagent\'s network tests."""\n\n\n'
     'def hello():\n    return "hello from luagent-probe"\n'),
    (f"{DIST_INFO}/METADATA",
     f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\n"
     "Summary: A probe package for luagent's network tests\n"),
    (f"{DIST_INFO}/WHEEL",
     "Wheel-Version: 1.0\nGenerator: luagent tests/wheel_build.py\n"
     "Root-Is-Purelib: true\nTag: py3-none-any\n"),
]


def record_hash(data):
    """The RECORD form of a file's hash: sha256= and the urlsafe base64 digest without padding."""
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def build(out_dir):
    """Writes the wheel into out_dir and returns its path."""
    os.makedirs(out_dir, exist_ok=True)
    entries = [(name, text.encode()) for name, text in FILES]
    record = "".join(f"{name},{record_hash(data)},{len(data)}\n" for name, data in entries)
    record += f"{DIST_INFO}/RECORD,,\n"
    entries.append((f"{DIST_INFO}/RECORD", record.encode()))
    path = os.path.join(out_dir, FILENAME)
    tmp = path + ".tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as whl:
        for name, data in entries:
            info = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            whl.writestr(info, data)
    os.replace(tmp, path)
    return path


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: tests/wheel_build.py OUT_DIR\n")
        return 2
    print(build(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
