"""Whether a host name is a Kubernetes pod's (pure).

A pod's host name is its pod's name, unless it shares its node's network (``hostNetwork``), where it keeps the
node's name. A Deployment's pod is named ``<deployment>-<pod-template-hash>-<suffix>``: the hash (``SafeEncodeString``
of a uint32's decimal digits) and the 5-character suffix (``String(5)``) are drawn from apimachinery's vowel-free
alphabet (``alphanums`` in k8s.io/apimachinery/pkg/util/rand/rand.go, kubernetes/kubernetes at 15816b38), which
real host names' words almost never fit. So a host with such a name is a pod in a network namespace of its own,
whose interfaces are those its network attachments gave it.
"""
from __future__ import annotations

from typing import Optional

from nccldiag import rx

_K8S_RAND = "[bcdfghjklmnpqrstvwxz2456789]"
_POD_NAME = rx.compile(r"[a-z0-9](?:[a-z0-9.-]{0,200}[a-z0-9])?-" + _K8S_RAND + "{6,10}-" + _K8S_RAND + "{5}")


def in_pod(host: Optional[str]) -> bool:
    """Whether ``host`` is a Deployment's pod's name: what was read there was read inside a pod of its own network."""
    return bool(host) and bool(_POD_NAME.fullmatch(host or ""))
