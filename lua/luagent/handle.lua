-- luagent.handle: handles born closed, as Lua's liolib makes them (its
-- newprefile gives a file handle that counts as closed until fopen has
-- succeeded). A handle built in steps — a box (a session made, then
-- started), an MCP client (a transport opened, then initialized), a pool
-- (registered, then filled) — is guarded by the scope that builds it: every
-- way out of that scope before it is built (`return nil, err`, an error, a
-- cancellation) releases it, so no failure path closes by hand; what it
-- holds so far is its release's to free (a release works on a half-built
-- handle). A handle born closed also refuses use until it is built.
--
--   local building <close> = handle.building(h [, release])   h.closed = true until built
--   local building <close> = handle.guard(h [, release])      the same, h usable while it is built
--   return building:built([value]) -> value (default h)      built: leaving the scope keeps it
--   release(h): what frees a half-built h (default h:close())
local handle = {}

local Guard = {}
Guard.__index = Guard

function Guard:__close()
  if not self.done then self.release(self.handle) end
end

function Guard:built(...)
  self.done = true
  if self.born_closed then self.handle.closed = false end
  if select("#", ...) > 0 then return ... end
  return self.handle
end

function handle.guard(h, release)
  return setmetatable({handle = h, release = release or h.close}, Guard)
end

function handle.building(h, release)
  h.closed = true
  local g = handle.guard(h, release)
  g.born_closed = true
  return g
end

return handle
