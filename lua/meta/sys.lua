---@meta luagent.sys
-- luagent.sys, a low-level module: recipes normally do not need it (the
-- recipe API, luagent.sandbox, .model, .agent, ..., is built on it). It is
-- not a field of the `luagent` class. LuaLS annotations: definitions only.
-- LuaLS takes one module per file: `---@meta luagent.sys` above makes
-- `require "luagent.sys"` give the types of the table returned below.
-- luacheck: ignore 212 241  (declarations: arguments unused, classes never read)

---low-level: recipes normally do not need this.
---luagent.sys: small facts about the host process (src/lua/lua_sys.c).
---@class luagent.sys
local sys = {}

---This process's id.
---@return integer
function sys.pid() end

---Is that process still there?
---@param pid integer
---@return boolean
function sys.alive(pid) end

---An environment variable, or nil.
---@param name string
---@return string?
function sys.getenv(name) end

---Is the file descriptor a terminal?
---@param fd integer
---@return boolean
function sys.isatty(fd) end

---@return string
function sys.hostname() end

---Wall-clock seconds since the epoch (with fraction).
---@return number
function sys.time() end

---Runs a host program (no shell). output = stdout and stderr, or shown live with inherit.
---@param argv string[]
---@param opts? {inherit?: boolean}
---@return integer exit_code
---@return string output
function sys.execute(argv, opts) end

---A process's start time (clock ticks since boot), which with the pid names
---a process even after pid reuse; nil when it is gone.
---@param pid integer
---@return integer?
function sys.process_start(pid) end

---n random bytes from the operating system, as hex.
---@param n integer
---@return string
function sys.random_hex(n) end

---Peak resident memory of this process, in bytes.
---@return integer
function sys.maxrss() end

---@param data string
---@return string hex digest
function sys.sha256(data) end

---The digest of a file, read in chunks.
---@param path string
---@return string? hex
---@return integer|luagent.Error size_or_err
function sys.sha256_file(path) end

---A file embedded in the binary ("sandbox/Dockerfile", "lua/meta/luagent.lua"), or nil.
---@param name string
---@return string?
function sys.asset(name) end

---The names of the files embedded in the binary (its assets), in order.
---@return string[]
function sys.assets() end

---Standard base64.
---@param bytes string
---@return string
function sys.base64(bytes) end

---A signal's name without "SIG" (15 -> "TERM"), or nil for a number with none.
---The one table of names (src/core/process.c), which proc:kill uses too.
---@param n integer
---@return string?
function sys.signal_name(n) end

---A signal's number from its name ("TERM", "SIGTERM", "term") or its decimal ("15"), or nil.
---@param name string
---@return integer?
function sys.signal_number(name) end

---An IP address or CIDR block in canonical text, with its family and prefix
---("10.0.0.0/8" -> "10.0.0.0/8", "ipv4", 8; "[::1]" -> "::1/128", "ipv6", 128), or nil
---and a config error saying what is wrong (junk, a prefix out of range, bits set below
---the prefix, an IPv4 octet with a leading zero). src/core/netaddr.c, which sandbox
---egress rules use.
---@param text string
---@return string|nil canonical
---@return "ipv4"|"ipv6"|luagent.Error family_or_err
---@return integer? prefix
function sys.cidr(text) end

---nil for a public unicast address, else the class that sandbox egress refuses unless
---an address rule names it: "loopback", "private", "link-local", "unique-local",
---"IPv4-mapped IPv6", "unspecified", "carrier-grade NAT", "multicast", "reserved",
---"documentation", "benchmarking", "IETF protocol assignment", "NAT64", "6to4",
---"Teredo", "discard-only", "site-local". Raises for text that is not an address literal
---("1.2.3.4", "::1", "[::1]").
---@param address string
---@return string? class
function sys.address_class(address) end

return sys
