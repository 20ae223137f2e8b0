#pragma once
// On/off switches read from the environment (HALOEX_PDL,
// HALOEX_FORWARD_FIRST, HALOEX_CELL_ORDER_GRAPH, ...; docs/running.md), all
// by one rule: unset or empty gives the default, "0" off, "1" on, and any
// other value is refused, naming the variable, the value and what it
// accepts -- a typo such as HALOEX_PDL=off used to mean "on" for one switch
// and "off" for another. Internal.

namespace haloex::detail {

// The switch `name`, or `fallback` where it is unset or empty; throws
// haloex::Error (InvalidInput) for any value but 0 or 1. `what` says what it
// switches, for that message; `whenUnset`, where the default depends on the
// run (e.g. on the atom count), says how it is chosen, in place of this
// run's value (which would read as the rule).
bool environmentSwitch(const char* name, bool fallback, const char* what, const char* whenUnset = nullptr);

}  // namespace haloex::detail
