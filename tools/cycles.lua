-- cycles: the cycles of a directed graph, for tools/symbol-cycles.lua and
-- tools/require-cycles.lua (loaded with dofile beside them).
--   cycles(nodes, edges) -> {"a -> b -> a", ...}
-- nodes: a list (the order the search starts from); edges[n]: a sorted list.
-- A depth-first search; a back edge to a node on the current path is a cycle.
return function(nodes, edges)
  local state, path, found = {}, {}, {}
  local function visit(n)
    state[n] = 1
    path[#path + 1] = n
    for _, m in ipairs(edges[n] or {}) do
      if state[m] == 1 then
        local i = #path
        while path[i] ~= m do i = i - 1 end
        found[#found + 1] = table.concat(path, " -> ", i) .. " -> " .. m
      elseif not state[m] then
        visit(m)
      end
    end
    path[#path] = nil
    state[n] = 2
  end
  for _, n in ipairs(nodes) do if not state[n] then visit(n) end end
  return found
end
