#!/usr/bin/env python3
"""pause_image.py BINARY ARCHIVE REFERENCE: an OCI image archive (oci-archive, as `ctr images
import` and `podman load` read it) whose one layer is BINARY as /pause, its entrypoint, named
REFERENCE. The lab's kubelets need a sandbox (pause) image and no registry can be reached, so
`scripts/dev.sh tools` builds Kubernetes' own pause.c (from the pinned k8s.io/kubernetes
module) and wraps it with this. Deterministic: the same binary gives the same digests.
"""
import hashlib
import io
import json
import sys
import tarfile


def blob(out: tarfile.TarFile, data: bytes) -> dict:
    digest = hashlib.sha256(data).hexdigest()
    info = tarfile.TarInfo(f"blobs/sha256/{digest}")
    info.size, info.mtime = len(data), 0
    out.addfile(info, io.BytesIO(data))
    return {"digest": f"sha256:{digest}", "size": len(data)}


def main() -> None:
    binary, archive, ref = sys.argv[1:4]
    with open(binary, "rb") as f:
        pause = f.read()
    layer_io = io.BytesIO()
    with tarfile.open(fileobj=layer_io, mode="w", format=tarfile.PAX_FORMAT) as layer:
        info = tarfile.TarInfo("pause")
        info.size, info.mode, info.mtime = len(pause), 0o755, 0
        layer.addfile(info, io.BytesIO(pause))
    layer_bytes = layer_io.getvalue()
    config = json.dumps({
        "architecture": "amd64", "os": "linux",
        "config": {"Entrypoint": ["/pause"], "User": "65535:65535"},
        "rootfs": {"type": "layers",
                   "diff_ids": [f"sha256:{hashlib.sha256(layer_bytes).hexdigest()}"]},
    }, sort_keys=True).encode()
    with tarfile.open(archive, "w") as out:
        layout = json.dumps({"imageLayoutVersion": "1.0.0"}).encode()
        info = tarfile.TarInfo("oci-layout")
        info.size = len(layout)
        out.addfile(info, io.BytesIO(layout))
        manifest = json.dumps({
            "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                       **blob(out, config)},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar",
                        **blob(out, layer_bytes)}],
        }, sort_keys=True).encode()
        index = json.dumps({
            "schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
            "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
                           **blob(out, manifest),
                           "platform": {"architecture": "amd64", "os": "linux"},
                           "annotations": {"org.opencontainers.image.ref.name": ref,
                                           "io.containerd.image.name": ref}}],
        }, sort_keys=True).encode()
        info = tarfile.TarInfo("index.json")
        info.size = len(index)
        out.addfile(info, io.BytesIO(index))


if __name__ == "__main__":
    main()
