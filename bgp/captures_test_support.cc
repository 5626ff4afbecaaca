#include "bgp/captures_test_support.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <optional>

namespace vipd::bgp::test {

std::optional<Bytes> parseHex(std::string_view text) {
  if (text.size() % 2 != 0) {
    return std::nullopt;
  }
  Bytes out;
  for (size_t i = 0; i < text.size(); i += 2) {
    auto nibble = [](char c) -> int {
      if (c >= '0' && c <= '9') {
        return c - '0';
      }
      if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
      }
      return -1;
    };
    const int high = nibble(text[i]);
    const int low = nibble(text[i + 1]);
    if (high < 0 || low < 0) {
      return std::nullopt;
    }
    out.push_back(static_cast<uint8_t>(high * 16 + low));
  }
  return out;
}

std::vector<CapturedMessage> loadCapture(std::string_view peer) {
  const std::string path = std::string(VIPD_TEST_DATA) + "/captures/" + std::string(peer) + ".hex";
  std::ifstream in(path);
  std::vector<CapturedMessage> messages;
  if (!in) {
    ADD_FAILURE() << "cannot open " << path;
    return messages;
  }
  std::string line;
  std::string comment;
  int lineNumber = 0;
  while (std::getline(in, line)) {
    ++lineNumber;
    if (line.empty()) {
      continue;
    }
    if (line[0] == '#') {
      comment = line;
      continue;
    }
    auto wire = parseHex(line);
    if (!wire) {
      ADD_FAILURE() << path << ":" << lineNumber << ": not a hex message";
      continue;
    }
    CapturedMessage message;
    message.label = std::string(peer) + ":" + std::to_string(lineNumber) + " " + comment;
    const bool ebgp = comment.find(" ebgp (") != std::string::npos;
    message.ibgp = comment.find(" ibgp (") != std::string::npos;
    EXPECT_NE(ebgp, message.ibgp) << path << ":" << lineNumber << ": session not named";
    const size_t at = comment.find(" message ");
    EXPECT_NE(at, std::string::npos) << path << ":" << lineNumber << ": message not numbered";
    if (at != std::string::npos) {
      message.number = std::atoi(comment.c_str() + at + 9);
    }
    message.wire = *std::move(wire);
    messages.push_back(std::move(message));
  }
  return messages;
}

std::vector<Bytes> allCapturedMessages() {
  std::vector<Bytes> result;
  for (auto peer : kPeers) {
    for (auto& m : loadCapture(peer)) {
      result.push_back(std::move(m.wire));
    }
  }
  return result;
}

}  // namespace vipd::bgp::test
