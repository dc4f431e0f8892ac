"""No libibverbs provider for the RDMA devices: the verbs library finds the devices the kernel exposes but no
user-space driver (provider: libmlx5, libmlx4, librxe, ... of rdma-core's ibverbs-providers, or MLNX_OFED's) to
claim them, so every verbs program sees no device. libibverbs says so as it starts: 'libibverbs: Warning: couldn't
open config directory '/etc/libibverbs.d'.' (the providers' configuration, installed with them, is absent),
'libibverbs: Warning: no userspace device-specific driver found for /sys/class/infiniband_verbs/uverbsN', or
'couldn't load driver '<name>''; then ibv_devinfo reports 'No IB devices found', perftest cannot find the device,
and librdmacm before 2015 said 'librdmacm: Fatal: no RDMA devices found' (every program that opens the RDMA CM:
libfabric's verbs provider, Open MPI).

Evidence: one of those warnings beside a verbs tool that found no device (the failure lexicon's
``no-rdma-device``), or beside librdmacm's 'Fatal: no RDMA devices found'. librdmacm's line alone is no fault
either: on a node without RDMA devices an MPI that then runs over TCP prints it at every start. The warnings alone are no fault: a container without the providers prints them at every start
of a program that links libibverbs, and a job that does not use RDMA runs on.
References: linux-rdma/rdma-core libibverbs/init.c and dynamic_driver.c (the warnings); dsx-ai-factory/infra-
controller PR 5251 (tests/cases/node-dsxinfra5251-scout-ibv-devinfo-no-ib-devices-ibverbs-providers-missing: the
ibverbs-providers package added to the image); nminoru/pib issue 2 ('no userspace device-specific driver found'
then 'No IB devices found'); SoftRoCE/rxe-dev issue 65 (the providers' config directory moved to /etc/libibverbs.d
fixed it); linux-rdma/rdma-core src/cma.c at eaa2aceaac41 (librdmacm's ucma_init: 'Fatal: no RDMA devices found'
when ibv_get_device_list is empty; the print was removed by 2b2aad809 'Remove prints to stderr'); ofiwg/libfabric
issue 975 (tests/cases/net-node45-libfabric975-usnic-no-userspace-verbs-driver-fi-getinfo-enodev: the usNIC devices
without a verbs provider, librdmacm's line, fi_getinfo -19).
"""
from __future__ import annotations

import sys
from typing import List

from nccldiag import rx
from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis, Evidence

ID = "ibverbs-provider-missing"
TITLE = "No libibverbs provider for the RDMA devices"
FIX = ("Install the user-space verbs providers where the program runs (the node, or the container image): "
       "rdma-core's ibverbs-providers (Debian/Ubuntu; rdma-core's libibverbs on RHEL) beside libibverbs and "
       "ibverbs-utils, or the MLNX_OFED/DOCA user space that matches the host's driver; check that "
       "/etc/libibverbs.d lists the provider (mlx5.driver) and that its library (libmlx5) is installed.")
CONFIRM = "ls /etc/libibverbs.d; ls /usr/lib/*/libibverbs/ 2>/dev/null; ibv_devinfo -l"

PROVIDER = rx.compile(r"libibverbs: Warning: (?:couldn\S{1,6}t open config directory [^\n]{0,200}?libibverbs\.d|"
                      r"no userspace device-specific driver found for|couldn\S{1,6}t load driver )")
# librdmacm's ucma_init when libibverbs lists no device (librdmacm before 2015)
RDMACM_NONE = rx.compile(r"librdmacm: Fatal: no RDMA devices found")


def diagnose(inp: Inputs) -> List[Diagnosis]:
    warned = C.find(inp, PROVIDER, ("error", "app", "warn", "last-error"))
    if not warned:
        return []
    none = [line for line in inp.failure_lines or [] if line.shape == "no-rdma-device"]
    rdmacm = C.find(inp, RDMACM_NONE, ("error", "app", "warn", "last-error"))
    if not none and not rdmacm:
        return []
    ev = [Evidence("log", line.text, line.ref, line.host) for line in none[:2]] + C.evidence(rdmacm, 1)
    return [C.make(sys.modules[__name__], f"libibverbs found no provider for the RDMA devices"
                   f"{C.on(C.hosts(warned))}, so no verbs program sees a device", warned, extra=ev,
                   confidence="high",
                   why=("libibverbs warned that it has no user-space driver for the devices (its providers' "
                        "configuration or libraries are missing), and a verbs tool then found no device"),
                   alternatives=["rdma_device_not_in_container: a container given no /dev/infiniband prints 'No IB "
                                 "devices found' without the provider warnings"])]
