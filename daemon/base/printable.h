// Text that came from elsewhere (another host's /probe.json, an operator's withdraw reason, a
// peer's shutdown message, a file) on its way to a terminal or a line-oriented log. A control
// character in it forges a line there (\n, \r) or drives the terminal (an ESC sequence clears the
// screen or retitles the window; the C1 CSI does the same on some terminals), and bytes that are
// not UTF-8 can hide either. printable() writes each of them as an escape; unprintableIn() names
// the first, for refusing text that must be one line of text.
//
// Control characters: C0 (U+0000 to U+001F, tab included), DEL (U+007F) and C1 (U+0080 to
// U+009F). A backslash is left as it is: "\n" typed as two characters cannot break a line.
//
// Header-only: vipctl, linked statically without the daemon's libraries, uses it too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace vipd::daemon {

namespace printable_detail {

// The length (1 to 4) of the well-formed UTF-8 sequence at the start of `s` (not empty), and its
// code point; length 0 when it is not one (a stray continuation byte, an overlong form, a
// surrogate, a truncated sequence).
struct Utf8Char {
  size_t length;
  uint32_t codePoint;
};

inline Utf8Char decode(std::string_view s) {
  const auto lead = static_cast<unsigned char>(s[0]);
  size_t length = 0;
  uint32_t least = 0;
  if (lead < 0x80) {
    return {1, lead};
  }
  if ((lead & 0xE0) == 0xC0) {
    length = 2;
    least = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3;
    least = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4;
    least = 0x10000;
  } else {
    return {0, 0};
  }
  if (s.size() < length) {
    return {0, 0};
  }
  uint32_t codePoint = lead & (0x7Fu >> length);
  for (size_t i = 1; i < length; ++i) {
    const auto next = static_cast<unsigned char>(s[i]);
    if ((next & 0xC0) != 0x80) {
      return {0, 0};
    }
    codePoint = (codePoint << 6) | (next & 0x3Fu);
  }
  if (codePoint < least || codePoint > 0x10FFFF || (codePoint >= 0xD800 && codePoint <= 0xDFFF)) {
    return {0, 0};
  }
  return {length, codePoint};
}

inline bool isControl(uint32_t codePoint) {
  return codePoint < 0x20 || (codePoint >= 0x7F && codePoint <= 0x9F);
}

// "\n", "\r", "\t"; other C0 and DEL as "\x1b", C1 as "\u009b"; a byte that is not UTF-8 as
// "\xff" (`notUtf8`).
inline std::string escape(uint32_t value, bool notUtf8) {
  constexpr char kHex[] = "0123456789abcdef";
  if (!notUtf8) {
    switch (value) {
      case '\n':
        return "\\n";
      case '\r':
        return "\\r";
      case '\t':
        return "\\t";
      default:
        break;
    }
  }
  std::string out = notUtf8 || value < 0x80 ? "\\x" : "\\u00";
  out += kHex[(value >> 4) & 0xF];
  out += kHex[value & 0xF];
  return out;
}

}  // namespace printable_detail

// `text` with each control character and each byte that is not UTF-8 escaped (printable_detail::
// escape); everything else as it is.
[[nodiscard]] inline std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    auto c = printable_detail::decode(text);
    if (c.length == 0) {
      out += printable_detail::escape(static_cast<unsigned char>(text[0]), true);
      c.length = 1;
    } else if (printable_detail::isControl(c.codePoint)) {
      out += printable_detail::escape(c.codePoint, false);
    } else {
      out.append(text.substr(0, c.length));
    }
    text.remove_prefix(c.length);
  }
  return out;
}

// The first control character or byte that is not UTF-8 in `text`, for a message ("a line feed
// (\n)", "the control character \x1b", "a byte that is not UTF-8 (\xff)"); nullopt when there is
// none.
[[nodiscard]] inline std::optional<std::string> unprintableIn(std::string_view text) {
  while (!text.empty()) {
    auto c = printable_detail::decode(text);
    if (c.length == 0) {
      return "a byte that is not UTF-8 (" +
             printable_detail::escape(static_cast<unsigned char>(text[0]), true) + ")";
    }
    if (printable_detail::isControl(c.codePoint)) {
      switch (c.codePoint) {
        case '\n':
          return std::string("a line feed (\\n)");
        case '\r':
          return std::string("a carriage return (\\r)");
        case '\t':
          return std::string("a tab (\\t)");
        default:
          return "the control character " + printable_detail::escape(c.codePoint, false);
      }
    }
    text.remove_prefix(c.length);
  }
  return std::nullopt;
}

}  // namespace vipd::daemon
