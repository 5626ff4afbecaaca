#include "kube/error.h"

namespace vipd::kube {

std::string_view errorKindName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Config:
      return "config";
    case ErrorKind::Resolve:
      return "resolve";
    case ErrorKind::Connect:
      return "connect";
    case ErrorKind::Timeout:
      return "timeout";
    case ErrorKind::Tls:
      return "tls";
    case ErrorKind::Transport:
      return "transport";
    case ErrorKind::TooLarge:
      return "too-large";
    case ErrorKind::Http:
      return "http";
    case ErrorKind::Protocol:
      return "protocol";
    case ErrorKind::Local:
      return "local";
    case ErrorKind::Cancelled:
      return "cancelled";
  }
  return "unknown";
}

}  // namespace vipd::kube
