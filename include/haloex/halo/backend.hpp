#pragma once
/// @file
/// The backend registry in the halo API's namespace, so that an application
/// writes haloex::Backend, haloex::parseBackend and haloex::makeTransport.
/// The registry is the transport layer's and defined there once:
/// transport/backend.hpp (the backends, their names, which this library
/// has and why not, Auto's rule) and transport/registry.hpp (the factory and
/// its options). The Auto that measures is halo/auto_select.hpp.
#include "haloex/transport/backend.hpp"
#include "haloex/transport/registry.hpp"

namespace haloex {

using transport::autoRuleReason;
using transport::availableBackends;
using transport::Backend;
using transport::backendFromString;
using transport::defaultMemorySpace;
using transport::deviceUnavailableReason;
using transport::knownBackends;
using transport::makeTransport;
using transport::parseBackend;
using transport::resolveAuto;
using transport::toString;
using transport::unavailableReason;

}  // namespace haloex
