// The probe matrix `vipd probe --watch` shows: rows the sites, columns the targets, each cell the
// success rate, p50/p99 latency and a sparkline of the last probes. Built from the /probe.json
// documents of one or more `vipd probe` instances (one per site). Pure: text and JSON out, no
// terminal, no I/O. The documents are untrusted (any field may be missing or of the wrong type:
// a cell shows what it can, never throws; every field is read through json_fields, never with
// json::value() or get<T>() unchecked, which throw on a type mismatch).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace vipd::daemon {

// One probe instance as the watcher saw it: the document, or why it could not be had.
struct ProbeSource {
  std::string url;          // where it was fetched from
  nlohmann::json document;  // /probe.json; null when `error` is set
  std::string error;        // "connect to 192.0.2.1:9474 failed: Connection refused"
};

// The last probes as a sparkline, one character each, oldest first: a success is a block from
// U+2581 to U+2588 by its latency relative to the slowest success shown, a failure is 'x'.
[[nodiscard]] std::string sparkline(const nlohmann::json& recent, size_t width);

// The matrix as one JSON document for scripts:
// {"sites": [...], "targets": [...], "cells": [{"site", "target", "successRate", "p50Ms",
//   "p99Ms", "probes", "lastReason", "lastDetail", "sparkline"}], "unreachable": [{"url",
//   "error"}]}. Sites sorted by name; targets in the order first seen.
[[nodiscard]] nlohmann::json probeMatrixJson(const std::vector<ProbeSource>& sources,
                                             size_t sparkWidth = 20);

// The matrix as text for a terminal, one line per site under a header of target names; a
// failing cell ends with its last failure's reason; unreachable instances are listed below.
// `title` is the first line (the watcher puts the time there). Every string from the matrix
// (names, reasons, URLs, errors: other hosts' text) is drawn with its control characters escaped
// (daemon/base/printable.h), so a document cannot drive the terminal or fake a row.
[[nodiscard]] std::string renderProbeMatrix(const nlohmann::json& matrix,
                                            const std::string& title);

}  // namespace vipd::daemon
