-- The check of tests/e2e/eval_diff_test.sh: the answer names the unit, kWh
-- (the fake provider echoes the request, so it does when the prompt asks for it).
return function(run)
  local ok = (run.output or ""):find("kWh", 1, true) ~= nil
  return {passed = ok, score = ok and 1 or 0, note = ok and "names the unit (kWh)" or "no unit: kWh is missing"}
end
