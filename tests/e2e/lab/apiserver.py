"""A stand-in kube-apiserver for vipd's health gate: certificates (make_ca, make_server_cert,
shaped like kubeadm's) and an HTTPS /readyz whose answer a test switches (FakeApiserver).
"""

from __future__ import annotations

import os
import re
import sys
from typing import Iterable, Optional

from .base import E2E_DIR, run
from .checks import wait_until
from .netns import Lab, Namespace


def make_ca(lab: Lab, name: str) -> tuple[str, str]:
    """A self-signed CA in the lab's temp dir (openssl CLI): (cert path, key path)."""
    crt, key = lab.path(f"{name}.crt"), lab.path(f"{name}.key")
    run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", key, "-out", crt, "-days", "2", "-subj", f"/CN={name}",
         "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
    return crt, key


# What kubeadm puts in the apiserver's serving certificate besides the node's address: the
# `kubernetes` Service's names and its ClusterIP (the first address of the default service CIDR).
# No 127.0.0.1: vipd's default check (https://127.0.0.1:6443/readyz) has to verify the name
# `kubernetes` instead, the one every kubeadm, k3s and RKE2 apiserver certificate carries.
KUBEADM_APISERVER_DNS = ("kubernetes", "kubernetes.default", "kubernetes.default.svc",
                         "kubernetes.default.svc.cluster.local")
KUBEADM_SERVICE_IP = "10.96.0.1"


def make_server_cert(lab: Lab, ca: tuple[str, str], name: str, node_ip: Optional[str] = None,
                     only_ip: Optional[str] = None,
                     extra_ips: Iterable[str] = ()) -> tuple[str, str]:
    """An apiserver serving certificate signed by ca: (cert path, key path). By default shaped
    like a stock kubeadm one: CN kube-apiserver, DNS KUBEADM_APISERVER_DNS, IP
    KUBEADM_SERVICE_IP and node_ip when given, and no 127.0.0.1. extra_ips: more IP SANs, as
    kubeadm's apiServer.certSANs adds them (the VIPs). With only_ip, the other shape: the
    address as the CN and as the only subjectAltName, no DNS name at all."""
    crt, key, csr = lab.path(f"{name}.crt"), lab.path(f"{name}.key"), lab.path(f"{name}.csr")
    ext = lab.path(f"{name}.ext")
    if only_ip is not None:
        cn, sans = only_ip, [f"IP:{only_ip}"]
    else:
        cn = "kube-apiserver"
        sans = [f"DNS:{d}" for d in KUBEADM_APISERVER_DNS] + [f"IP:{KUBEADM_SERVICE_IP}"]
        if node_ip is not None:
            sans.append(f"IP:{node_ip}")
        sans += [f"IP:{ip}" for ip in extra_ips]
    with open(ext, "w") as f:
        f.write(f"subjectAltName={','.join(sans)}\nextendedKeyUsage=serverAuth\n"
                "basicConstraints=CA:FALSE\n")
    run(["openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", key, "-out", csr, "-subj", f"/CN={cn}"])
    run(["openssl", "x509", "-req", "-in", csr, "-CA", ca[0], "-CAkey", ca[1], "-CAcreateserial",
         "-out", crt, "-days", "2", "-extfile", ext])
    return crt, key


class FakeApiserver:
    """fake_apiserver.py in ns: HTTPS on addr:port with cert/key; what /readyz answers is read
    from a file per request, so set_mode() switches it at run time:
      ok       200 "ok" (a healthy apiserver)
      proxy502 502 with an HTML error page (a proxy in front of a dead apiserver)
      other    200 with a body that is not "ok"
      slow     answers "ok" after 2 s (longer than any probe timeout)
      version  200 JSON with gitVersion (an apiserver's /version)
      unready  500 with the "[-]etcd failed" check list of an apiserver that is not ready
    Connections are HTTP/1.1 keep-alive (as a real apiserver's), closed after --idle-timeout."""
    binaries = ["openssl"]

    def __init__(self, lab: Lab, ns: Namespace, cert: tuple[str, str], mode: str = "ok",
                 addr: str = "127.0.0.1", port: int = 6443, name: str = "apiserver"):
        self.mode_file = lab.path(f"{name}.mode")
        self.set_mode(mode)
        self.addr, self.port = addr, port
        self.proc = lab.start(ns, name, [sys.executable, os.path.join(E2E_DIR, "fake_apiserver.py"),
                                         "--cert", cert[0], "--key", cert[1], "--listen",
                                         f"{addr}:{port}", "--mode-file", self.mode_file])
        self.procs = [self.proc]
        wait_until(lambda: "listening" in self.proc.log_text(), 10, 0.05,
                   lambda: f"{name} to listen: {self.proc.log_text()!r}")

    def set_mode(self, mode: str) -> None:
        tmp = self.mode_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(mode)
        os.replace(tmp, self.mode_file)  # atomic: a request never reads half a mode

    def url(self, path: str = "/readyz") -> str:
        return f"https://{self.addr}:{self.port}{path}"

    def server_names(self) -> list[str]:
        """The TLS server name (SNI) of each handshake so far, "-" where none was sent."""
        return re.findall(r"^\S+ SNI (\S+)$", self.proc.log_text(), re.MULTILINE)

    def stop(self) -> None:
        self.proc.stop()
