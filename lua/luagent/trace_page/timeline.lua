-- luagent.trace_page.timeline (internal): the timeline of the trace page:
-- per agent a lane of model calls, one of tool calls and one of the sandbox
-- commands they ran (then model calls outside agents and sandbox commands
-- outside tool calls), each a bar from its start to its end on one time
-- axis, drawn as inline SVG; a bar links to its event and names it on hover.
--
--   timeline.html(ix) -> html   (ix: luagent.trace_page.index)
local f = require "luagent.trace_page.format"

local timeline = {}

local WIDTH = 1000            -- SVG units across; bars are at least MIN_BAR wide
local MIN_BAR = 1.5
local KIND_ORDER = {model = 1, tools = 2, sandbox = 3}

-- Tick spacing for an axis of `span` seconds: about 8 ticks, at 1, 2 or 5 x 10^n.
local function tick_step(span)
  local raw = span / 8
  local p = 10 ^ math.floor(math.log(raw, 10))
  for _, m in ipairs({1, 2, 5, 10}) do
    if m * p >= raw then return m * p end
  end
  return 10 * p
end

local function sorted_lanes(ix)
  local lanes = {}
  for k, lane in ipairs(ix.lanes) do lanes[k] = {lane = lane, order = k} end
  table.sort(lanes, function(a, b)
    local aa, ba = a.lane.agent, b.lane.agent
    if (aa ~= nil) ~= (ba ~= nil) then return aa ~= nil end
    if aa and ba and aa.n ~= ba.n then return aa.n < ba.n end
    if aa and ba then return (KIND_ORDER[a.lane.label] or 9) < (KIND_ORDER[b.lane.label] or 9) end
    return a.order < b.order
  end)
  return lanes
end

function timeline.html(ix)
  if #ix.bars == 0 then return '<p class="note">no timed model calls, tool calls or sandbox commands</p>' end
  local span = ix.span > 0 and ix.span or 1
  local by_lane = {}
  for _, b in ipairs(ix.bars) do
    local list = by_lane[b.lane] or {}
    by_lane[b.lane] = list
    list[#list + 1] = b
  end
  local out = {'<div class="tl">'}
  local last_agent = false
  for _, item in ipairs(sorted_lanes(ix)) do
    local lane = item.lane
    local bars = by_lane[lane.key] or {}
    if lane.agent ~= last_agent then
      out[#out + 1] = lane.agent and ('<div class="who"><span class="ag a%d">%s</span></div>'):format(lane.agent.n % 8,
        f.escape(lane.agent.name)) or '<div class="who dim">outside agents</div>'
    end
    last_agent = lane.agent
    local label = f.escape(lane.label)
    local busy = 0
    local rects = {}
    for k, b in ipairs(bars) do
      busy = busy + (b.stop - b.start)
      local x = b.start / span * WIDTH
      local w = math.max((b.stop - b.start) / span * WIDTH, MIN_BAR)
      rects[k] = ('<a href="#e%d"><rect class="%s" x="%.2f" y="2" width="%.2f" height="14"><title>%s</title></rect></a>')
        :format(b.target, b.class, math.min(x, WIDTH - MIN_BAR), w, f.escape(b.title))
    end
    out[#out + 1] = ('<div class="lane"><div class="lab">%s <span class="dim">%d · %s</span></div>'
      .. '<svg viewBox="0 0 %d 18" preserveAspectRatio="none">%s</svg></div>'):format(label, #bars, f.secs(busy), WIDTH,
      table.concat(rects))
  end
  local step = tick_step(span)
  local ticks = {}
  for s = 0, span + 1e-9, step do
    ticks[#ticks + 1] = ('<span style="left:%.3f%%">%s</span>'):format(s / span * 100, f.secs(s))
  end
  out[#out + 1] = ('<div class="lane axis"><div class="lab"></div><div class="ticks">%s</div></div>'):format(
    table.concat(ticks))
  out[#out + 1] = '<p class="legend"><i class="b-model"></i>model call <i class="b-cached"></i>from the cache '
    .. '<i class="b-tool"></i>tool call <i class="b-exec"></i>sandbox command <i class="b-bad"></i>error</p></div>'
  return table.concat(out)
end

return timeline
