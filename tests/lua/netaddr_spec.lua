-- luagent.sys.cidr and .address_class: the address rules' text and the classes of
-- addresses a sandbox may not reach unless a rule names them (src/core/netaddr.c).
local t = require "helper"
local sys = require "luagent.sys"

t.test("cidr gives the canonical block, its family and prefix", function()
  local text, family, prefix = sys.cidr("10.0.0.0/8")
  t.eq(text, "10.0.0.0/8"); t.eq(family, "ipv4"); t.eq(prefix, 8)
  t.same({sys.cidr("1.2.3.4")}, {"1.2.3.4/32", "ipv4", 32})
  t.same({sys.cidr("[::1]")}, {"::1/128", "ipv6", 128})
  t.same({sys.cidr("FD00:0::/8")}, {"fd00::/8", "ipv6", 8})
end)

t.test("cidr refuses bad blocks with a config error naming them", function()
  local none, err = sys.cidr("10.0.0.1/8")
  t.eq(none, nil)
  t.eq(err.kind, "config")
  t.eq(err.message, "10.0.0.1/8: bits set below the prefix; did you mean 10.0.0.0/8?")
  t.eq(select(2, sys.cidr("10.0.0.0/33")).message, "10.0.0.0/33: prefix out of range (0 to 32 for IPv4)")
  t.match(select(2, sys.cidr("010.0.0.1")).message, "^010%.0%.0%.1: an IPv4 octet with a leading zero")
  t.eq(tostring(select(2, sys.cidr("example.com"))), "config: example.com: not an IP address or CIDR block")
end)

t.test("address_class names the special classes and nil for public ones", function()
  t.eq(sys.address_class("8.8.8.8"), nil)
  t.eq(sys.address_class("2606:4700::1111"), nil)
  t.eq(sys.address_class("169.254.169.254"), "link-local")
  t.eq(sys.address_class("10.1.2.3"), "private")
  t.eq(sys.address_class("[::1]"), "loopback")
  t.eq(sys.address_class("::ffff:8.8.8.8"), "IPv4-mapped IPv6")
  t.eq(sys.address_class("fd00::1"), "unique-local")
end)

t.test("address_class raises for text that is not an address literal", function()
  t.eq(pcall(sys.cidr, "1.2.3.4\0junk"), false)
  t.eq(pcall(sys.address_class, "1.2.3.4\0junk"), false)
  for _, bad in ipairs({"example.com", "10.0.0.0/8", "", "[::1", "010.0.0.1"}) do
    local ok, err = pcall(sys.address_class, bad)
    t.eq(ok, false, bad)
    t.match(tostring(err), "not an IP address literal", bad)
  end
end)

return t.done()
