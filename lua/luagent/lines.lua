-- luagent.lines: lines out of a byte stream that arrives in chunks (a
-- server's stdout, an engine's JSON-lines answer), in time linear in the
-- bytes. Matching a pattern over the whole buffer each chunk rescans an
-- unfinished line every time: quadratic (a 64 KB line took a minute).
--
--   local split = lines.splitter()
--   split:feed(chunk, function(line) ... end)   each whole line, without its "\n"
--   split.bytes                                  bytes of the unfinished line held
--   split:take() -> the unfinished line's bytes, no longer held
-- Internal: not a recipe API.
local lines = {}

local Splitter = {}
Splitter.__index = Splitter

function lines.splitter()
  return setmetatable({parts = {}, bytes = 0}, Splitter)
end

function Splitter:take()
  local held = table.concat(self.parts)
  self.parts, self.bytes = {}, 0
  return held
end

function Splitter:feed(chunk, on_line)
  local pos, nl = 1, chunk:find("\n", 1, true)
  while nl do
    local line = chunk:sub(pos, nl - 1)
    if self.bytes > 0 then line = self:take() .. line end
    on_line(line)
    pos = nl + 1
    nl = chunk:find("\n", pos, true)
  end
  if pos <= #chunk then
    self.parts[#self.parts + 1] = pos == 1 and chunk or chunk:sub(pos)
    self.bytes = self.bytes + #chunk - pos + 1
  end
end

return lines
