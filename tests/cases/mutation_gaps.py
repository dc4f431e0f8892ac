"""The (case, transformation) pairs of tests/mutations.py on which a case named right is not named right
any more, with the outcome of today and why.

tests/unit/test_case_mutations.py runs every failed ``log`` case named right, and every healthy one, with its
texts transformed as a paste damages them. Each pair listed here is a strict expectation of its outcome: when a
change moves it (fixes it, or breaks it otherwise), the test fails until the entry is removed or updated. A pair
not listed must stay ``right`` (``ok`` for a healthy case). Never add an entry to make a new break pass: an
entry says why the transformed text no longer holds the evidence, or what the reader cannot yet read through.

``outcome`` is :func:`tests.realcases.score`'s word. The pairs whose outcome is ``false all-clear`` or ``false
alarm`` break a hard invariant; each is listed because the text left holds none of the failure (a tail, no INFO
lines, only the lexicon's lines) or because of a reading not done yet (a wrap, :data:`FALSE_ALARMS`), as its
reason says.
"""
from __future__ import annotations

from typing import Dict, Tuple

#: why a transformation can take the evidence of a case away, or what the reader does not read through yet
WHY: Dict[str, str] = {
    # outputs of several hosts, each under its own prompt, are read as one host's under a per-host label on every line
    "prefix-pdsh": (
        "a host's label on every line (pdsh's 'host: ') names one host for the whole text: outputs of several "
        "hosts pasted under their own prompts are read as that one host's readings"),
    "prefix-kubectl": (
        "a pod's label on every line (kubectl logs --prefix) names one pod for the whole text: outputs of several"
        " hosts pasted under their own prompts are read as that one pod's readings"),
    "prefix-mpi-host": (
        "Open MPI's host label on every line names one host for the whole text: outputs of several hosts pasted "
        "under their own prompts are read as that one host's readings"),
    "time-journal": (
        "a journal's host before every line names one host for the whole text: outputs of several hosts pasted "
        "under their own prompts are read as that one host's readings"),
    "tail-40": "the tail cut the evidence off: only the victim's later lines are left",
    "tail-15": (
        "the tail cut the evidence off (the WARN, the error line or the table's failing row is above the last"
        " 15 lines); a false all-clear here is a tail with no failure in it (a passing dcgmi diag table, 'ulimit -a',"
        " modinfo's fields, a P2P matrix of 'NS')"),
    "no-nccl-info": (
        "the cause is read from NCCL INFO lines (plugin, GDR, socket interface lines): without them the text "
        "holds none of it (a false all-clear here is a text left with no line of a failure: a hang's log)"),
    "anon-x": "the redaction took the evidence: the cause is read from the host name or the address itself",
    "anon-redacted": "the redaction took the evidence: the cause is read from the host name or the address itself",
    "anon-angle": "the redaction took the evidence: the cause is read from the host name or the address itself",
    "wrap-80": (
        "a line wrapped at 80 columns is joined again only where the text shows the wrap (nccl/unwrap.py): a "
        "continuation that starts as a line of the text starts is read as a line of its own"),
    "fold-s-80": (
        "lines broken at their blanks (fold -s -w 80) are joined again where the text shows it (nccl/unwrap.py): "
        "a piece whose continuation starts as a line starts (a time, an address, a shell prompt run into its output), "
        "a text broken once where longer lines stand beside the piece, or a table's row broken after its padding "
        "(the piece ends in more than one blank, as a padded table's rows do) stays apart"),
    "time-syslog": (
        "a syslog stamp with 'host kernel:' before every line makes the lines read as the kernel's: a process's own "
        "backtrace under it is not read as the process's"),
    "flush-left": (
        "nvidia-smi -q's counters grepped out of their sections ('SRAM Uncorrectable : 1' twice, no title) are told "
        "volatile from aggregate by their indentation alone: trimmed flush left, they are read under no section"),
    "pylog-basic": (
        "a Python logger's 'WARNING:celery.redirected:' before every line: a prompt is read with the logger's name "
        "before it as part of the prompt, and the command's answer under it, behind the same name, is not read as its "
        "answer"),
    "lexicon-only": (
        "only the failure lexicon's lines kept: the cause is read from the context they drop (NCCL INFO "
        "lines, a table's header, the command before its output, a hang's missing result); a false all-clear here is "
        "a text left empty or with no failure in it: the failure was in NCCL INFO lines (GDR disabled, the transports "
        "chosen), a hang that printed nothing, corrected AER errors, a link's state in a table or an empty grep"),
    "paragraphs": (
        "a paragraph's lines run together are cut back into records only at a record's start (an NCCL prefix, a "
        "kernel, syslog or ISO time, a launcher's rank or label, a traceback, a table's joined rows) and at the keys "
        "of ibstat, ibv_devinfo, lspci -vvv and nvidia-smi -q: another key-value output (modinfo, ulimit -a), "
        "nvidia-smi -q's counters grepped out of their sections (told volatile from aggregate by their indentation "
        "alone), a prompt with its command and the output after it, nccl-tests' '#' "
        "header and result rows, an nvidia-smi error and the command before it, or labels that differ line by line "
        "('[trainer3]:', '[trainer0|0]:') stay one line, where the field's name cannot be told from the value "
        "before it"),
    "prefix-rank": (
        "a command typed at a prompt and the output it printed are read together only where the command starts its "
        "line (after a prompt or alone): behind a launcher's rank label a 'cat' of NCCL's configuration file is not "
        "taken for the command, and the settings under it are not read"),
    "stack-lineno-rank": (
        "a file line number and a rank's label before a command typed at a prompt: as prefix-rank, the command is "
        "not found, and the output under it is not read as its output"),
    "indent-4": (
        "a command indented as markdown code is not found at the start of its line: the output under it is not "
        "read as its output (a 'cat' of NCCL's configuration file)"),
    "indent-tab": (
        "a command indented by a tab is not found at the start of its line: the output under it is not read as its "
        "output (a 'cat' of NCCL's configuration file)"),
    "lineno-dot": (
        "a text posted with a paste site's line numbers already: a second numbering over them is taken off once, "
        "and the site's number left before the node's output hides the output's first key"),
    "lineno-pipe": (
        "a text posted with a paste site's line numbers already: an editor's 'N | ' over them is taken off, and the "
        "site's number left before the node's output hides the output's first key"),
    "list-dash": (
        "a text posted with a paste site's line numbers already: a list marker before them is taken off, and a line "
        "number is not read behind a list marker (a list's '- 3 GPUs' is no numbered line)"),
    "list-star": (
        "a text posted with a paste site's line numbers already: a list marker before them is taken off, and a line "
        "number is not read behind a list marker (a list's '* 3 GPUs' is no numbered line)"),
    "stack-srun": (
        "a text posted with a paste site's line numbers already: a forum's number, srun's label and a time before "
        "them are taken off, and a second line number is not read behind the first (the site's number is left before "
        "the node's output and hides its first key)"),
}

#: (case id, transformation) -> its outcome today
KNOWN: Dict[Tuple[str, str], str] = {
    # broken at blanks where the continuation starts with a time (squeue's 'since 2022-04-29T20:28:38', Slurm's
    # 'CANCELLED AT 2020-07-03T02:59:56'), with an address, after a root prompt the page ran its output into, or once
    # beside longer lines; a table's row broken after its padding (kubectl's columns, df's /dev/shm row)
    ("gpu-bloom176b-logbook-eval-hang-no-timeout-dataloader-deadlock", "fold-s-80"): "false all-clear",
    # EFA's 153-column abort folded at its blanks: 'err: Unknown' ends the first line, both ENOMEM codes are on the
    # second, so the failure line is surfaced (unexplained) but the cause that needs both codes is not read
    ("net-gaps78d-awsofinccl107-p3dn-docker-efa-unable-to-write-to-eq-enomem-memlock", "fold-s-80"): "missed",
    ("gpu-gpumontools141-dcgm-exporter-fatal-dcgm-module-not-loaded-profiling-default", "fold-s-80"): "missed",
    ("gpu-ocp-docs-driver-daemonset-crashloop-elfutils-rhel-entitlement", "fold-s-80"): "wrong cause",
    ("net-bloom-jz-ops-notes-connect-refused-broken-node-network", "fold-s-80"): "missed",
    ("net-nvidia-freebsd-docs-ifconfig-mce0-no-carrier-fec-sync-loss", "fold-s-80"): "false all-clear",
    ("node-desitarget628-srun-step-cancelled-due-to-time-limit-debug-queue", "fold-s-80"): "missed",
    ("node-fw41-ray28781-raylet-ip-prefixed-system-memory-low-killing-task", "fold-s-80"): "missed",
    ("node-lizhenyang-blog-dataloader-socket-error-111-dev-shm-64m", "fold-s-80"): "missed",
    ("node-volcano1782-pod-unexpectedadmissionerror-gpu-unhealthy-allocatable-3-of-4", "fold-s-80"): "missed",
    ("gpu-gaps60b-olora-logbook-2gpu-deepspeed-watchdog-broadcast-seq1-p2p-disable-fixes", "tail-40"): "false all-clear",
    ("gpu-gaps60b-olora-logbook-2gpu-deepspeed-watchdog-broadcast-seq1-p2p-disable-fixes", "tail-15"): "false all-clear",
    # the locked-memory limit is read from 'ulimit -l' typed at a prompt with its answer on the next line: the
    # lexicon's lines alone, or the lines run together, keep neither the command nor the '64' under it (the warning of
    # the openib BTL left is no failure line); behind a Python logger's 'WARNING:celery.redirected:' the prompt is read
    # with the logger's name before it, and the answer under it, behind the same name, is not read as its answer
    ("net-gaps62d-shmem4py28-mpich-ofi-endpoint-open-failed-psm3-cant-open-nic-unit-container", "lexicon-only"): "missed",
    ("node-gaps62e-slinkycontainers14-sinfo-r-gres-gpu-count-repor-slurmd-pyxis-without-nvml", "lexicon-only"): "false all-clear",
    ("node-gaps62e-slinkycontainers14-sinfo-r-gres-gpu-count-repor-slurmd-pyxis-without-nvml", "paragraphs"): "false all-clear",
    ("net-gaps62a-vllm1726-invalid-config-blocking-attribute-int-min-nccl-2-14-3-loaded", "lexicon-only"): "missed",
    ("node-gaps62b-gpuoperator2511-r580-nvidia-smi-q-fabric-state-in-progress-validator-init-error", "lexicon-only"): "missed",
    ("node-gaps62b-gpuoperator2511-r580-nvidia-smi-q-fabric-state-in-progress-validator-init-error", "paragraphs"): "missed",
    ("gpu-gaps62c-aicr1858-aks-nd96isr-h100-v5-nvrm-not-supported-probe-failed-faulty-gpu", "paragraphs"): "wrong cause",
    ("net-gaps54-ompiusers11186-mthca0-openfabrics-init-warning-ulimit-l-64", "lexicon-only"): "missed",
    ("net-gaps54-ompiusers11186-mthca0-openfabrics-init-warning-ulimit-l-64", "paragraphs"): "false all-clear",
    # behind the logger's labels the ulimit answer is not read, and ibv_devinfo's second port, PORT_DOWN (a port with
    # no cable, which the working port beside it makes no fault of the run), is the only cause left to name
    ("net-gaps54-ompiusers11186-mthca0-openfabrics-init-warning-ulimit-l-64", "pylog-basic"): "wrong cause",
    # the DKMS build error is in the paste's first lines: its last 15 lines leave the service's 'Module nv_peer_mem
    # does not exist', read as the peer-memory module missing, not why it is missing
    ("node-gaps54-nvpeermem119-dkms-build-error-5-15-0-88-module-nv-peer-mem-not-found", "tail-15"): "wrong cause",
    # the eight ranks' 'CUDA out of memory' lines are in the middle of the log; its last 40 or 15 lines are torchrun's
    # ChildFailedError summary ('failed (exitcode: 1)', 'Root Cause (first observed failure)'), which names no cause
    ("gpu-pages53-glm130b-logs-eval-tp8-allgather-logits-cuda-oom-12gib", "tail-40"): "missed",
    ("gpu-pages53-glm130b-logs-eval-tp8-allgather-logits-cuda-oom-12gib", "tail-15"): "missed",
    # the serial console's oops is in its first lines (BUG, IP, Oops); its last 40 or 15 lines are the call trace and
    # the persistence daemon's systemd lines, with no oops line left: a failure without its cause (unexplained). The
    # failure lexicon does not keep the kernel's 'IP: ... [nvidia]' line, so the lexicon's lines alone name the oops
    # but not the module it faulted in
    ("gpu-hpcdocs49-azure-support-ubuntu-4-4-0-75-nvidia-rm-null-deref-nvidia-smi-oops", "tail-40"): "missed",
    ("gpu-hpcdocs49-azure-support-ubuntu-4-4-0-75-nvidia-rm-null-deref-nvidia-smi-oops", "tail-15"): "missed",
    # the only line of the failure is NCCL's INFO 'ncclMaxSharedMem 82240 exceeds device/fn maxSharedMem 79856' (the
    # thread's log stops before the run fails): without INFO lines, or with the lexicon's lines alone, no line is left
    ("gpu-nccltrk1637-2x-rtx5090-nccl2251-maxsharedmem-exceeds-p2p-disabled", "no-nccl-info"): "false all-clear",
    ("gpu-nccltrk1637-2x-rtx5090-nccl2251-maxsharedmem-exceeds-p2p-disabled", "lexicon-only"): "false all-clear",
    ("net-cloud42-awsofi663-p5-torchrun-efa-insert-remote-address-av-outbound-security-group", "lexicon-only"): "missed",
    # the path MTU the test asked for is read from its shell command ('ibv_srq_pingpong ... -m 4096') beside the
    # ibv_devinfo of the port: a command cut off (the tail, the lexicon's lines) leaves the retry-exceeded failure
    # without it
    ("net-blogs49-live4thee-roce-srq-pingpong-path-mtu-4096-over-active-1024-retry-exceeded", "tail-15"): "wrong cause",
    ("net-blogs49-live4thee-roce-srq-pingpong-path-mtu-4096-over-active-1024-retry-exceeded", "lexicon-only"): "wrong cause",
    ("net-blogs49-live4thee-roce-srq-pingpong-path-mtu-4096-over-active-1024-retry-exceeded", "paragraphs"): "wrong cause",
    # a corrected PCIe error the firmware reported: no line of its record nor the kernel's aer_status line is a
    # failure line (corrected errors were corrected by the link), so the lexicon's lines leave the text empty
    ("node-blog44-lambdadalton-notes-wrx80e-nvme-m2-slot-apei-corrected-aer-rxerr", "lexicon-only"): "false all-clear",
    # the kernel log ends in the hung task's call trace: its last 40 lines are stack frames and registers, without
    # the 'blocked for more than' line or the task's state line above them: a failure without its cause (unexplained)
    ("node-m4-runlog-tr141-dmesg-hung-task-python-gpfs-mmfs-write", "tail-40"): "missed",
    ("node-m4-runlog-tr141-dmesg-hung-task-python-gpfs-mmfs-write", "tail-15"): "missed",
    # the lexicon's lines alone keep Gloo's 'connectFullMesh failed ... Connection refused,' but not the wrapped
    # 'remote=[127.0.0.1]' under it nor the warning before it that Gloo fell back to loopback
    ("net-awsdoeks50-vllm-gloo-hostname-loopback-fallback-connectfullmesh-refused", "lexicon-only"): "missed",
    # the loopback address is the evidence ('remote=[127.0.0.1]', 'local=[127.0.0.1]'): redacted, the failed mesh
    # is read as gloo's interface
    ("net-awsdoeks69-vllm-ray-actorhandle-then-gloo-loopback-127001", "anon-x"): "wrong cause",
    ("net-awsdoeks69-vllm-ray-actorhandle-then-gloo-loopback-127001", "anon-redacted"): "wrong cause",
    # the tail keeps the traceback only: the WARN naming the missing interface is above its last 15 lines
    ("net-felixfu-notes-2x-p40-bootstrap-no-socket-interface-found-wrong-ifname-eno1", "tail-15"): "missed",
    # the NCCL WARN 'Duplicate GPU detected : rank 2 and rank 0 both on CUDA device f000' is the first line, above the
    # server's last 15 lines of traceback: the tail keeps uvicorn's ERROR and EOFError only
    ("gpu-fw41-trl3310-vllm-serve-duplicate-gpu-rank2-rank0-eoferror", "tail-15"): "missed",
    # the lexicon's lines alone keep Gloo's 'connectFullMesh failed ... no error' but not the warning before it that
    # Gloo fell back to the loopback address (a warning a working single-node run prints too): read as gloo's peers
    # not reaching each other, not as the host name
    ("net-fw41-vllm7074-ray-worker-gloo-hostname-loopback-connectfullmesh", "lexicon-only"): "wrong cause",
    # 'No route to host' from a peer in the node's own subnet is a firewall's answer: redacted, the subnet is gone
    ("net-csdn-blog-2-node-nccl248-connect-no-route-to-host-firewall", "anon-x"): "wrong cause",
    ("net-csdn-blog-2-node-nccl248-connect-no-route-to-host-firewall", "anon-redacted"): "wrong cause",
    # the /dev/shm row of df (130 columns) wrapped, or dropped with the lines no lexicon row holds
    ("node-lizhenyang-blog-dataloader-socket-error-111-dev-shm-64m", "wrap-80"): "missed",
    ("node-lizhenyang-blog-dataloader-socket-error-111-dev-shm-64m", "lexicon-only"): "missed",
    ("gpu-bloom13b-logbook-ecc-uncorrectable-then-barrier-oom-faulty-node", "tail-40"): "wrong cause",
    ("gpu-bloom13b-logbook-ecc-uncorrectable-then-barrier-oom-faulty-node", "tail-15"): "wrong cause",
    ("gpu-pytorch150852-nccl2262-nvls-invalid-argument-driver-122", "tail-15"): "missed",
    ("node-trk-shinecluster30-nvml-mismatch-unattended-upgrade-libnvidia", "tail-15"): "false all-clear",
    ("net-cscs-docs-nccl-net-plugin-ofi-could-not-find-aws-libfabric-not-found", "no-nccl-info"): "wrong cause",
    ("net-nccl1634-hpcx-plugin-on-some-nodes-only-hang", "no-nccl-info"): "false all-clear",
    ("net-nccl1837-socket-ifname-nonexistent-trainer-prefix", "no-nccl-info"): "wrong cause",
    ("net-nvpeermem56-gdr-disabled-distance-phb-nccl247", "no-nccl-info"): "false all-clear",
    ("net-oneflow3586-veth-linklocal-net-socket-connect-timeout", "no-nccl-info"): "false all-clear",
    ("net-gitcode-blog-vllm-3x4090-socket-connect-abort-spare-server-ifname", "anon-x"): "missed",
    ("net-nccl187-hostname-prefix-collision-p2p-ipc-across-hosts", "anon-x"): "missed",
    ("net-gitcode-blog-vllm-3x4090-socket-connect-abort-spare-server-ifname", "anon-redacted"): "missed",
    ("net-nccl187-hostname-prefix-collision-p2p-ipc-across-hosts", "anon-redacted"): "missed",
    ("gpu-autocast381-ddp-post-fit-rank0-only-barrier-watchdog", "lexicon-only"): "missed",
    ("gpu-bloom176b-logbook-eval-hang-no-timeout-dataloader-deadlock", "lexicon-only"): "false all-clear",
    ("gpu-mlengineering-dcgmi-diag-r2-gpu-memory-fail-faulty-node", "lexicon-only"): "missed",
    ("gpu-mlengineering-nvidia-smi-grep-sram-uncorrectable-broken-gpu", "lexicon-only"): "missed",
    ("gpu-nccl104-8xm40-nccl1-test-stalls-acs", "lexicon-only"): "false all-clear",
    ("gpu-nccl257-4x1080ti-allreduce-hang-intel-iommu", "lexicon-only"): "false all-clear",
    ("gpu-nccltests37-8xv100-allgather-4g-out-of-bounds-nccl-bug", "lexicon-only"): "missed",
    ("gpu-torchtitan1224-ep-duplicate-gpu-set-device-after-mesh", "lexicon-only"): "missed",
    ("net-cscs-docs-nccl-net-plugin-ofi-could-not-find-aws-libfabric-not-found", "lexicon-only"): "wrong cause",
    ("net-gitcode-blog-nccl-versions-differ-af-inet-family-0", "lexicon-only"): "missed",
    ("net-nccl1634-hpcx-plugin-on-some-nodes-only-hang", "lexicon-only"): "false all-clear",
    ("net-nccl1837-socket-ifname-nonexistent-trainer-prefix", "lexicon-only"): "missed",
    ("net-nccl187-hostname-prefix-collision-p2p-ipc-across-hosts", "lexicon-only"): "missed",
    ("net-nccltests219-socket-ifname-absent-on-one-node", "lexicon-only"): "missed",
    ("net-nvidia-freebsd-docs-ifconfig-mce0-no-carrier-fec-sync-loss", "lexicon-only"): "false all-clear",
    ("net-nvpeermem56-gdr-disabled-distance-phb-nccl247", "lexicon-only"): "false all-clear",
    ("net-oneflow3586-veth-linklocal-net-socket-connect-timeout", "lexicon-only"): "false all-clear",
    ("net-rccl1423-rdma-link-down-polling-flapping-port", "lexicon-only"): "false all-clear",
    ("node-gpud482-ibstat-port-down-polling-anonymised-guids", "lexicon-only"): "missed",
    ("net-blog44-lambdadalton-notes-ibstat-mlx5-port-down-polling-elided", "lexicon-only"): "missed",
    ("net-gaps76c-nickwkt-cluster-ansible-ibstat-mlx4-port-initializing-linkup-no-subnet-manager", "lexicon-only"): "missed",
    ("node-gpuoperator-docs-nvidia-smi-q-fabric-state-in-progress-no-fabricmanager", "lexicon-only"): "missed",
    ("net-nccl1191-alltoall-700-nodes-ibv-create-cq-enomem-ulimit-unlimited", "lexicon-only"): "wrong cause",
    ("net-nccl473-nccltests-unhandled-system-error-docker-ipc-host", "lexicon-only"): "wrong cause",
    # NCCL's 'Call to ibv_create_qp failed' alone, the INFO lines around it dropped, reads as its usual cause, a
    # locked-memory limit; the ulimit output that shows the limit unlimited is no lexicon line
    ("net-nccl638-alltoall-gdr-ibv-create-qp-failed-memlock-unlimited", "lexicon-only"): "wrong cause",
    ("net-nccl897-gdrdma-one-side-only-peermem-not-loaded", "lexicon-only"): "false all-clear",
    ("node-nvpeermem46-lsmod-empty-modinfo-nv-peer-mem-after-reboot", "lexicon-only"): "false all-clear",
    ("node-deltaops-medium-aer-multiple-corrected-error-syslog-flood-wrapped", "lexicon-only"): "false all-clear",
    ("node-redhat-kb-rhel6-rhel7-pcie-bus-error-corrected-replay-timer-bad-tlp", "lexicon-only"): "false all-clear",
    ("node-cloudnetops-blog-lspci-lnksta-8gts-x2-downgraded-from-16gts-x4", "lexicon-only"): "false all-clear",
    ("list-gaps76e-freebsd-hackers-ql41212-25gbe-pciconf-link-x2-of-x8-lspci-downgraded-13gbps", "lexicon-only"): "false all-clear",
    # the tail keeps the NVSwitches' fatal SXid lines only (an NVLink error); the Xid 79 that explains them is cut
    ("gpu-gpud-docs-quoted-dmesg-xid79-nvswitch-sxid20034-ltssm-fault", "tail-15"): "wrong cause",
    ("net-nccl638-alltoall-gdr-ibv-create-qp-failed-memlock-unlimited", "tail-15"): "false all-clear",
    ("node-nemorl1683-g6-l4-topo-p2p-all-ns-cuda-217-anonymised-prompt", "tail-15"): "false all-clear",
    ("node-nvpeermem46-lsmod-empty-modinfo-nv-peer-mem-after-reboot", "tail-15"): "false all-clear",
    ("node-lcp0578-notes-2x-rtx3090-nvidia-smi-cannot-communicate-utils-without-driver", "tail-15"): "false all-clear",
    ("gpu-dcgm198-dcgmi-nvlink-link-status-all-down-diag-passes", "tail-15"): "false all-clear",
    ("gpu-dcgm198-dcgmi-nvlink-link-status-all-down-diag-passes", "lexicon-only"): "false all-clear",
    ("gpu-mlengineering-nvidia-smi-grep-sram-uncorrectable-broken-gpu", "flush-left"): "missed",


    ("net-mlengineering-nccl-net-ib-mlx5-bond-roce-included-low-bandwidth", "no-nccl-info"): "false all-clear",
    ("net-mlengineering-nccl-net-ib-mlx5-bond-roce-included-low-bandwidth", "lexicon-only"): "false all-clear",
    # the WorkNCCL(...) that completes the watchdog message, wrapped onto the next line, is not a lexicon line
    ("gpu-tistory-blog-k8s-2x-rtxpro6000-ddp-allreduce-watchdog-p2p-disable-fixes", "lexicon-only"): "missed",
    # mpirun's 28-line help block: its one failure line ('There are not enough slots available in the system') is the
    # block's second line; the last 15 lines are its advice (the slots' sources, --oversubscribe), no failure
    ("node-grudge227-ci-mpirun-not-enough-slots-oversubscribe", "tail-15"): "false all-clear",
    ("node-ncar-docs-casper-singularity-exec-without-nv-nvml-driver-library-mismatch", "tail-15"): "wrong cause",
    ("node-ncar-docs-casper-singularity-exec-without-nv-nvml-driver-library-mismatch", "lexicon-only"): "wrong cause",
    ("node-hpxc-manual-sinfo-r-memory-errors-not-responding-nodes", "lexicon-only"): "false all-clear",
    ("node-dsxinfra5251-scout-ibv-devinfo-no-ib-devices-ibverbs-providers-missing", "lexicon-only"): "missed",
    ("net-horovod666-nccl23-untagged-warn-connection-closed-by-remote-peer-ifname", "tail-15"): "missed",
    # NCCL's 'Connection closed by remote peer' alone reads as a victim of a peer that went away; the INFO lines that
    # show the interface NCCL chose are dropped with the lines no lexicon row holds
    ("net-horovod666-nccl23-untagged-warn-connection-closed-by-remote-peer-ifname", "lexicon-only"): "wrong cause",
    # a paragraph's lines run together: records that no start tells apart (see WHY)
    ("gpu-bloom176b-logbook-eval-hang-no-timeout-dataloader-deadlock", "paragraphs"): "false all-clear",
    ("gpu-dcgm198-dcgmi-nvlink-link-status-all-down-diag-passes", "paragraphs"): "false all-clear",
    ("gpu-mlengineering-nvidia-smi-grep-sram-uncorrectable-broken-gpu", "paragraphs"): "missed",
    ("gpu-nccl104-8xm40-nccl1-test-stalls-acs", "paragraphs"): "false all-clear",
    ("gpu-nccl257-4x1080ti-allreduce-hang-intel-iommu", "paragraphs"): "false all-clear",
    ("gpu-nccltests37-8xv100-allgather-4g-out-of-bounds-nccl-bug", "paragraphs"): "missed",
    ("net-nccl1837-socket-ifname-nonexistent-trainer-prefix", "paragraphs"): "missed",
    ("net-nccl473-nccltests-unhandled-system-error-docker-ipc-host", "paragraphs"): "wrong cause",
    ("net-nccl897-gdrdma-one-side-only-peermem-not-loaded", "paragraphs"): "false all-clear",
    ("net-nccltests219-socket-ifname-absent-on-one-node", "paragraphs"): "missed",
    ("net-ucx8229-ib-iface-create-cq-enomem-max-locked-memory-64k", "paragraphs"): "wrong cause",
    ("node-ncar-docs-casper-singularity-exec-without-nv-nvml-driver-library-mismatch", "paragraphs"): "wrong cause",
    ("node-nvpeermem46-lsmod-empty-modinfo-nv-peer-mem-after-reboot", "paragraphs"): "false all-clear",
    # the pod's prompt, ibdev2netdev typed after it and its one line of output run together into one line: the
    # output after a command on its line is not read; with the lexicon's lines alone, no line of it is left
    ("net-sriovop382-pod-ibdev2netdev-ib-vf-down-linkstate-not-enabled", "paragraphs"): "false all-clear",
    ("net-sriovop382-pod-ibdev2netdev-ib-vf-down-linkstate-not-enabled", "lexicon-only"): "false all-clear",
    # the node-side trackers' batch: an nvidia-smi -q Fabric fragment trimmed flush left or run together is read under
    # no section (as node-azhpcimages506); the lexicon's lines alone drop the ibstat port's 'Port 1:' and 'Physical
    # state: Polling', the mlx5 firmware lines (no row of the lexicon) and libibverbs' provider warnings
    ("gpu-node45-dradriver626-nvidia-smi-q-fabric-completed-health-summary-unhealthy", "flush-left"): "false all-clear",
    ("gpu-node45-dradriver626-nvidia-smi-q-fabric-completed-health-summary-unhealthy", "lexicon-only"): "false all-clear",
    ("gpu-node45-dradriver626-nvidia-smi-q-fabric-completed-health-summary-unhealthy", "paragraphs"): "false all-clear",
    ("net-node45-azhpcdiag76-ibstat-fragment-elided-port-down-polling", "lexicon-only"): "missed",
    ("net-node45-azhpcdiag76-ibstat-fragment-elided-port-down-polling", "paragraphs"): "missed",
    ("net-node45-libfabric975-usnic-no-userspace-verbs-driver-fi-getinfo-enodev", "lexicon-only"): "missed",
    ("net-node45-spdk2965-dmesg-mlx5-health-compromised-miss-count-fw-stuck", "lexicon-only"): "false all-clear",
    ("net-node45-ucx7738-host-prefixed-mlx5-create-dct-no-done-completion-timeout", "lexicon-only"): "false all-clear",
    # the page's rendering broke each kernel line at its colons: the last 40 or 15 lines hold only the assert words
    ("net-kb48-nvbfsw-nic-mode-host-mlx5-health-miss-count-fw-internal-error-icmc", "tail-40"): "false all-clear",
    ("net-kb48-nvbfsw-nic-mode-host-mlx5-health-miss-count-fw-internal-error-icmc", "tail-15"): "false all-clear",
    ("net-kb48-nvbfsw-nic-mode-host-mlx5-health-miss-count-fw-internal-error-icmc", "lexicon-only"): "missed",
    ("net-kb48-nvofed-reset-flow-mlx4-internal-error-crdump-device-reset", "lexicon-only"): "false all-clear",
    # the batches from practitioners' pages, vendors' notes and trackers (gaps63a-e):
    # a pasted /etc/nccl.conf is read only after its 'cat' typed at a prompt (or alone on its line): behind a rank's
    # label, an indent, a file line number, or run into one paragraph, the command is not found and the file's
    # NCCL_GRAPH_FILE is not read; the last lines and the lexicon's lines hold none of it (a result table that verifies)
    ("net-gaps63c-jingchao-azure-nc48v4-etc-nccl-conf-graph-file-allreduce-busbw-57-not-225", "tail-40"): "false all-clear",
    ("net-gaps63c-jingchao-azure-nc48v4-etc-nccl-conf-graph-file-allreduce-busbw-57-not-225", "tail-15"): "false all-clear",
    ("net-gaps63c-jingchao-azure-nc48v4-etc-nccl-conf-graph-file-allreduce-busbw-57-not-225", "prefix-rank"): "false all-clear",
    ("net-gaps63c-jingchao-azure-nc48v4-etc-nccl-conf-graph-file-allreduce-busbw-57-not-225", "lexicon-only"): "false all-clear",
    ("net-gaps63c-jingchao-azure-nc48v4-etc-nccl-conf-graph-file-allreduce-busbw-57-not-225", "stack-lineno-rank"): "false all-clear",
    ("net-gaps63c-jingchao-azure-nc48v4-etc-nccl-conf-graph-file-allreduce-busbw-57-not-225", "paragraphs"): "false all-clear",
    ("net-gaps63c-jingchao-azure-nc48v4-etc-nccl-conf-graph-file-allreduce-busbw-57-not-225", "indent-4"): "false all-clear",
    ("net-gaps63c-jingchao-azure-nc48v4-etc-nccl-conf-graph-file-allreduce-busbw-57-not-225", "indent-tab"): "false all-clear",
    # ESXi's 'PCIPassthru: total number of pages needed' cut at 80 columns: the words the cause reads are split over
    # two lines
    ("gpu-gaps63b-dellkb-esxi-vmx-pcipassthru-pages-exceed-limit-devicepoweron-failed", "fold-s-80"): "missed",
    # the lexicon's lines alone drop what names the cause: mlx5's cable module events (a flap is no failure line),
    # Fabric Manager's version line beside the driver's, Mooncake's GID warnings (warnings that name the cause beside
    # a failed run), Open MPI's registration warning, the start wrapper's usage text
    ("net-gaps63b-dtcms-blog-mlx5-port-module-cable-unplugged-plugged-flapping-loose-cable", "lexicon-only"): "false all-clear",
    ("net-gaps63a-mooncake1593-no-suitable-gid-ipv6-only-gids-no-available-rnic", "lexicon-only"): "missed",
    ("net-gaps63a-sglang30737-mooncake-gid-is-null-bonded-roce-kvtransfer-failed", "lexicon-only"): "missed",
    ("list-gaps63e-openmpi-users-22717-openib-reg-mem-limit-low-mlx4-mtt-parameters", "lexicon-only"): "false all-clear",
    ("net-gaps63e-linuxcluster-blog-openib-registerable-memory-32768-of-65476-mib-log-num-mtt", "lexicon-only"): "false all-clear",
    ("node-gaps63d-gpuoperator1595-nvlink5-fm-start-script-unknown-option-positional-config", "lexicon-only"): "false all-clear",
    # the last 15 lines hold only the wrapper's usage text or the warning's advice, not the line that names the cause
    ("net-gaps63e-linuxcluster-blog-openib-registerable-memory-32768-of-65476-mib-log-num-mtt", "tail-15"): "false all-clear",
    ("node-gaps63d-gpuoperator1595-nvlink5-fm-start-script-unknown-option-positional-config", "tail-15"): "false all-clear",
    # Fabric Manager's start wrapper's usage text run into one paragraph is no longer its usage block; libibumad's
    # line with its HTML escapes is cut where the journal wrapped it
    ("node-gaps63d-gpuoperator1595-nvlink5-fm-start-script-unknown-option-positional-config", "paragraphs"): "false all-clear",
    # the PCI address redacted: the kernel row reads a device that cannot leave D3cold as a lost GPU only on a GPU's
    # function 0, which the address says; the loopback address a peer was reached on redacted (127.0.0.1, Debian's
    # 127.0.1.1): nothing says the host name resolved to loopback
    ("gpu-gaps64f-herro-homelab-incident-vfio-2080ti-d3cold-to-d0-device-inaccessible-flr-timeout", "anon-x"): "missed",
    ("gpu-gaps64f-herro-homelab-incident-vfio-2080ti-d3cold-to-d0-device-inaccessible-flr-timeout", "anon-redacted"): "missed",
    ("net-gaps64b-awsomedt192-srun-label-flattened-socketstartconnect-loopback-connection-abort", "anon-x"): "missed",
    ("net-gaps64b-awsomedt192-srun-label-flattened-socketstartconnect-loopback-connection-abort", "anon-redacted"): "missed",
    ("net-gaps64b-pytorch15592-gloo-ioexception-connect-127-0-1-1-refused-gloo-socket-ifname", "anon-x"): "missed",
    ("net-gaps64b-pytorch15592-gloo-ioexception-connect-127-0-1-1-refused-gloo-socket-ifname", "anon-redacted"): "missed",
    # srun's flattened labels cut at 80 columns: NCCL's line naming the loopback peer split over two lines
    ("net-gaps64b-awsomedt192-srun-label-flattened-socketstartconnect-loopback-connection-abort", "wrap-80"): "missed",
    # the evidence is NCCL's INFO lines (the bootstrap on the IPoIB interface): without them, or with the failure
    # lines only, nothing names the interface
    ("net-gaps64b-nccl1000-dgx-a100-containers-bootstrap-socket-returns-oob-ib-iface", "no-nccl-info"): "false all-clear",
    ("net-gaps64b-nccl1000-dgx-a100-containers-bootstrap-socket-returns-oob-ib-iface", "lexicon-only"): "false all-clear",
    # the lexicon's lines alone drop what names the cause: the PCI core's D3cold line (a kernel row's, no failure
    # word), the GPU admin tools' 'CC mode is on' (a tool's statement, no failure line)
    ("gpu-gaps64f-herro-homelab-incident-vfio-2080ti-d3cold-to-d0-device-inaccessible-flr-timeout", "lexicon-only"): "missed",
    ("node-gaps64a-nvtrust30-gh200-h100-cc-mode-on-bare-metal-host-nvidia-smi-device-handle-unknown-error", "lexicon-only"): "wrong cause",
    # the last 15 lines are the working GPU node's nvidia-smi table; the CPU partition's failed nvidia-smi and srun's
    # exit code 9 are above them
    ("node-gaps64d-zenn-hyperpod-slurm-srun-nvidia-smi-cpu-partition-no-driver-exit-9", "tail-15"): "false all-clear",
    # the lexicon's lines alone drop the driver's 'Chipset not recognized' and 'not been qualified on this platform'
    # notices (no failure word), which name the platform; the failed RmInitAdapter alone is a GPU not initialised
    ("gpu-gaps65c-rpipcie677-pi5-rtx-a400-chipset-not-recognized-fwsec-no-wpr2-rminitadapter-failed", "lexicon-only"): "wrong cause",
    # the last 15 lines are strace's two opens of /dev/nvidiactl refused (EPERM) and the container's cgroup device
    # list; nvidia-smi's 'Failed to initialize NVML: Unknown Error' is above them
    ("node-gaps65c-bigdata150-container-nvidia-smi-nvml-unknown-error-strace-eperm-nvidiactl-cpu-manager-static", "tail-15"): "missed",
    # the lspci line of the flash recovery device is 89 columns: folded at 80, '[ConnectX-5 Flash' and 'Recovery]' are
    # two lines, and no line holds the device's name
    ("cf-gaps65b-sth32379-hp-mcx556a-allow-psid-change-burn-connectx5-flash-recovery", "fold-s-80"): "false all-clear",
    # the last 15 lines are 'mst start' and flint's query of the card; lspci's flash recovery device and the failed
    # burn are above them
    ("cf-gaps65b-sth41103-blank-cx455a-flash-write-protected-connectx4-flash-recovery", "tail-15"): "false all-clear",
    # the row reads Open MPI's failed connect to a link-local peer address (169.254.0.0/16): redacted, the address
    # names no link-local peer
    ("cf-gaps65e-mpi4pyex11-rpi-cluster-openmpi-btl-tcp-connect-link-local-169-254", "anon-x"): "missed",
    ("cf-gaps65e-mpi4pyex11-rpi-cluster-openmpi-btl-tcp-connect-link-local-169-254", "anon-redacted"): "missed",
    # the driver not loaded is read from nvidia-smi's 'couldn't communicate with the NVIDIA driver', the transcript's
    # third line: the last 15 lines keep modprobe's 'FATAL: Module nvidia not found', uname and find, said unexplained
    ("node-gaps67b-nvdocker365-kernel-3-13-0-116-runfile-driver-modprobe-fatal-module-nvidia-not-found", "tail-15"):
        "missed",
    # rank 1's uncorrectable ECC error is above the last 15 lines, which keep rank 0's watchdog timeout and
    # torchrun's SIGABRT: read as a hang of the ALLREDUCE, as the victim's lines alone say
    ("gpu-gaps68d-sirzzang-blog-rtx-pro-6000-dbe-rank1-uncorrectable-ecc-rank0-watchdog-timeout", "tail-15"):
        "wrong cause",
    # the port Down and perftest's 'Port number 1 state is Down' are above the last 15 lines, which keep ibstat's
    # Active ports and ib_write_bw given a bond device that does not exist ('IB device mlx5_bond_0 not found')
    ("net-gaps68d-crater-rdma-a100-mlx5-0-port-down-disabled-ib-write-bw-state-down", "tail-15"): "missed",
    # gloo's enforce message broken by its poster after the file and line: its second line ('ifa != nullptr. Unable to
    # find address for: ^lo') is no line of the lexicon, so only the 'RuntimeError: [enforce fail at ...]' is left
    ("net-gaps68f-awsdoeks51-vllm-lws-gloo-socket-ifname-nccl-exclusion-list-unable-to-find-address-for-lo",
     "lexicon-only"): "missed",
    # seven Ray-labelled lines run together into one record of 1.3 KB, not cut back at Ray's labels: an error line is
    # kept to its first 1,000 characters (nccl/facts.py MAX_ERROR_TEXT) and gloo's words come after them
    ("net-gaps68f-vllm12997-ray-r1-worker-gloo-unable-to-find-address-for-eth0", "paragraphs"): "missed",
    # the posted text carries pastebin's own line numbers ('  10. State: Down'): a second numbering, a list marker or
    # a launcher's label with a number before them is a second decoration over the first, and the reader takes a line
    # number off once, never behind a list marker; ibstat's block is not read, its 'State: Down' said unexplained.
    # The last 15 lines are 'mst status' and the first lines of ibv_devinfo, with no port state in them; the
    # lexicon's lines alone, or the lines run together, keep 'State: Down' with no ibstat around it
    ("net-pastebin-8zwb-ibstat-cx3-ethernet-port-down-disabled-no-cable", "tail-15"): "false all-clear",
    ("net-pastebin-8zwb-ibstat-cx3-ethernet-port-down-disabled-no-cable", "lineno-dot"): "missed",
    ("net-pastebin-8zwb-ibstat-cx3-ethernet-port-down-disabled-no-cable", "lineno-pipe"): "missed",
    ("net-pastebin-8zwb-ibstat-cx3-ethernet-port-down-disabled-no-cable", "list-dash"): "missed",
    ("net-pastebin-8zwb-ibstat-cx3-ethernet-port-down-disabled-no-cable", "list-star"): "missed",
    ("net-pastebin-8zwb-ibstat-cx3-ethernet-port-down-disabled-no-cable", "stack-srun"): "missed",
    ("net-pastebin-8zwb-ibstat-cx3-ethernet-port-down-disabled-no-cable", "stack-lineno-rank"): "missed",
    ("net-pastebin-8zwb-ibstat-cx3-ethernet-port-down-disabled-no-cable", "lexicon-only"): "missed",
    ("net-pastebin-8zwb-ibstat-cx3-ethernet-port-down-disabled-no-cable", "paragraphs"): "missed",
    # the process listing is no line of the lexicon, and run together its header is no header: the rank in state D
    # is not read, and the strace/py-spy 'Operation not permitted' lines are said unexplained
    ("node-m4-runlog-tr141-ps-auxc-python-dl-gpfs-froze-rank0", "lexicon-only"): "missed",
    ("node-m4-runlog-tr141-ps-auxc-python-dl-gpfs-froze-rank0", "paragraphs"): "missed",
    # corrected AER errors only: the failure lexicon leaves corrected errors to the pcie_errors check, so its lines
    # alone keep none of the five
    ("node-gaps69b-thomaskrenn-wiki-aer-data-link-relay-num-rollover-replay-timer-timeout-aspm", "lexicon-only"):
        "false all-clear",
    # only the lexicon's lines: the torch/NCCL error lines are kept, the lines that name the cause are not (the
    # ranks' 'cuda:0' devices in Accelerate's state blocks; NCCL's 'Failed to CUDA calloc async' WARN under a
    # ZeRO++ log whose lexicon line is torch's internal error only)
    ("gpu-gaps70b-viewdiff24-accelerate-4-processes-all-on-cuda0-duplicate-gpu", "lexicon-only"): "missed",
    ("gpu-gaps71a-deepspeed3827-zeropp-pdsh-node-ncclinternalerror-failed-cuda-calloc-async-1920", "lexicon-only"):
        "missed",
    # 'No route to host' toward a peer is a firewall's REJECT only where the node's own address, in NCCL's INFO
    # lines, shows the peer on its subnet: without those lines the same WARN is the interface's, as a paste of it
    # alone is
    ("net-csdn-blog-2-node-nccl248-connect-no-route-to-host-firewall", "no-nccl-info"): "wrong cause",
    ("net-csdn-blog-2-node-nccl248-connect-no-route-to-host-firewall", "lexicon-only"): "wrong cause",
    # one WARN line folded once at its blanks ('... failed : No' / 'route to host'), with no longer line beside it
    ("net-gaps70d-lumi-hackmd-20220823-rccl-net-connect-no-route-to-host-socket-ifname-hsn", "fold-s-80"): "missed",
    # loopback is the fault only for a job over several nodes, which the launcher's '--nnode=2' line says: the tail
    # and the lexicon's lines drop it, and without NCCL's INFO lines no interface is left to judge; the rank's
    # 'Connection refused, retrying' is NCCL retrying at INFO level, no failure of its own
    ("net-gaps70e-pytorch52916-two-nodes-nccl-socket-ifname-lo-bootstrap-127-0-0-1-connect-refused-retrying",
     "tail-15"): "false all-clear",
    ("net-gaps70e-pytorch52916-two-nodes-nccl-socket-ifname-lo-bootstrap-127-0-0-1-connect-refused-retrying",
     "no-nccl-info"): "false all-clear",
    ("net-gaps70e-pytorch52916-two-nodes-nccl-socket-ifname-lo-bootstrap-127-0-0-1-connect-refused-retrying",
     "lexicon-only"): "false all-clear",
    # NCCL's socket interfaces (ens5 beside a Docker veth with a link-local address) are INFO lines: without them
    # the unhandled system error is read as its usual cause, /dev/shm
    ("net-gaps70e-pytorch68893-ray-aws-2x-t4-nccl-socket-uses-ens5-and-veth-link-local-unhandled-system-error",
     "no-nccl-info"): "wrong cause",
    ("net-gaps70e-pytorch68893-ray-aws-2x-t4-nccl-socket-uses-ens5-and-veth-link-local-unhandled-system-error",
     "lexicon-only"): "wrong cause",
    # the completion error's WARN (152 characters, among NCCL lines of about 110) wrapped or folded once: its piece
    # with the status is not joined back, and 'Got completion' alone names no status
    ("net-gaps71a-deepspeed2931-2-nodes-inference-ibext-completion-error-12-vendor-129-terminate", "wrap-80"): "missed",
    ("net-gaps71a-deepspeed2931-2-nodes-inference-ibext-completion-error-12-vendor-129-terminate", "fold-s-80"):
        "missed",
    # the bus error's backtrace (ncclGroupEnd frames under 'Caught signal 7') is above the last 15 lines; under a
    # syslog stamp with 'kernel:' its lines read as the kernel's, not as the process's backtrace
    ("node-gaps71a-megatronds341-container-sigbus-ncclgroupend-barrier-compile-dependencies", "tail-15"): "missed",
    ("node-gaps71a-megatronds341-container-sigbus-ncclgroupend-barrier-compile-dependencies", "time-syslog"): "missed",
    # the lines run together: the rank's '[W...] Failed to check the "should dump" flag on TCPStore', a warning that
    # the reader leaves alone while it stands on its own line, is read behind the paragraph's '[rank6]:' as the
    # store unreachable, before slurmstepd's oom_kill events (still read, second)
    ("node-gaps72a-navsim-logbook-4-node-l40s-slurm-oom-kill-events-tcpstore-should-dump", "paragraphs"): "partly",
    ("gpu-gaps73e-dcgm263-gpu1-recovery-action-reset-xid-120-dcgm-health-check-blind", "tail-15"): "false all-clear",
    ("gpu-gaps73e-dcgm263-gpu1-recovery-action-reset-xid-120-dcgm-health-check-blind", "lexicon-only"): "false all-clear",
    ("gpu-gaps73e-dcgm263-gpu1-recovery-action-reset-xid-120-dcgm-health-check-blind", "paragraphs"): "false all-clear",
    ("list-gaps71d-openmpi-users-24833-no-active-ports-tcp-no-route-to-host-ibstatus-port-1-down-training", "tail-15"): "missed",
    ("list-gaps71d-openmpi-users-24833-no-active-ports-tcp-no-route-to-host-ibstatus-port-1-down-training", "prefix-rank"): "partly",
    ("list-gaps71d-openmpi-users-24833-no-active-ports-tcp-no-route-to-host-ibstatus-port-1-down-training", "prefix-pdsh"): "partly",
    ("list-gaps71d-openmpi-users-24833-no-active-ports-tcp-no-route-to-host-ibstatus-port-1-down-training", "time-syslog"): "partly",
    ("list-gaps71d-openmpi-users-24833-no-active-ports-tcp-no-route-to-host-ibstatus-port-1-down-training", "lexicon-only"): "wrong cause",
    ("list-gaps71d-openmpi-users-24833-no-active-ports-tcp-no-route-to-host-ibstatus-port-1-down-training", "prefix-kubectl"): "partly",
    ("list-gaps71d-openmpi-users-24833-no-active-ports-tcp-no-route-to-host-ibstatus-port-1-down-training", "prefix-mpi-host"): "partly",
    ("list-gaps71d-openmpi-users-24833-no-active-ports-tcp-no-route-to-host-ibstatus-port-1-down-training", "time-journal"): "partly",
    ("list-gaps71d-openmpi-users-24833-no-active-ports-tcp-no-route-to-host-ibstatus-port-1-down-training", "stack-lineno-rank"): "partly",
    ("list-gaps71d-openmpi-users-24833-no-active-ports-tcp-no-route-to-host-ibstatus-port-1-down-training", "paragraphs"): "wrong cause",
    ("list-gaps71d-openmpi-users-24833-no-active-ports-tcp-no-route-to-host-ibstatus-port-1-down-training", "indent-4"): "partly",
    ("list-gaps71d-openmpi-users-24833-no-active-ports-tcp-no-route-to-host-ibstatus-port-1-down-training", "indent-tab"): "partly",
    ("net-gaps72a-navsim-logbook-16-rank-diststoreerror-1-of-16-clients-joined-no-srun", "lexicon-only"): "wrong cause",
    ("net-gaps73a-enizaksoy-lab-2x2-v100-roce-cx3-nccltests-net-ib-no-gdrdma-host-staged", "no-nccl-info"): "false all-clear",
    ("net-gaps73a-enizaksoy-lab-2x2-v100-roce-cx3-nccltests-net-ib-no-gdrdma-host-staged", "lexicon-only"): "false all-clear",
    ("net-gaps73d-rccuchicago-polaris-128-node-training-ofi-selected-provider-tcp-gdr-not-supported", "lexicon-only"): "false all-clear",
    ("net-gaps73d-rccuchicago-polaris-128-node-training-ofi-selected-provider-tcp-gdr-not-supported", "paragraphs"): "wrong cause",
    ("net-gaps74d-aicr-docs-gke-tcpxo-rxdm-0-gpus-in-pci-tree-host-sys-not-mounted", "lexicon-only"): "false all-clear",
    ("net-gaps74d-aicr-docs-gke-tcpxo-rxdm-7-of-8-gpus-gvnic-takes-gpu-nic-slot", "lexicon-only"): "false all-clear",
    ("node-gaps72a-bigscience-jz-megatron-hangs-compiling-fused-kernels-stale-build-lock", "lexicon-only"): "false all-clear",
    ("node-gaps72a-bigscience-jz-megatron-hangs-compiling-fused-kernels-stale-build-lock", "paragraphs"): "false all-clear",
    ("node-gaps73b-colossalai5266-ifconfig-ib-netdev-ibp65s0-up-not-running-zero-packets", "lexicon-only"): "false all-clear",
    ("node-gaps73b-colossalai5266-ifconfig-ib-netdev-ibp65s0-up-not-running-zero-packets", "pylog-basic"): "false all-clear",
    ("node-gaps73f-sirzzang-blog-unattended-upgrades-rtx5090-nvml-driver-library-mismatch-580-159-kmod-580-126", "tail-15"): "false all-clear",
    ("node-gaps73m-openrlhf208-multi-node-sft-stuck-using-torch-extensions-root", "lexicon-only"): "false all-clear",
    ("node-gaps74a-kernelbugzilla215644-mx250-aspm-enabled-aer-corrected-data-link-flood", "lexicon-only"): "false all-clear",
    ("node-gaps74b-pyxis12-srun-enroot-import-mkdir-run-enroot-permission-denied", "paragraphs"): "wrong cause",
    ("node-gaps74b-pyxis138-epilog-pyxis-enroot-mkdir-raid-run-enroot-permission-denied-dirs-not-created", "paragraphs"): "wrong cause",
    ("node-gaps74c-cryptohaz-blog-proxmox-hetzner-i219-e1000e-hardware-unit-hang-tso-off", "tail-15"): "false all-clear",
    # p2pBandwidthLatencyTest's matrices hold no failure line: only the lexicon's lines leave nothing of them
    ("cf-gaps76a-mleng1-3x-rtx-a6000-p2p-writes-2gbs-below-staged-13gbs-amd-iommu", "lexicon-only"): "false all-clear",
    # the addresses show the peer on the subnet of the node's IPoIB bootstrap interface: redacted, the connect's
    # 'No route to host' is no longer tied to ib0, and the RoCE port beside the IB HCAs is named first
    ("net-gaps78c-nerscpytorchtesting-cori-gpu-shifter-bootstrap-ib0-no-route-to-host-socket-ifname-eth",
     "anon-x"): "partly",
    ("net-gaps78c-nerscpytorchtesting-cori-gpu-shifter-bootstrap-ib0-no-route-to-host-socket-ifname-eth",
     "anon-redacted"): "partly",
    # the fall-back to sockets is in NCCL INFO lines only ('NET/IB : No device found.', 'NET/Socket : Using'), above
    # the tail's lines of printed results
    ("net-gaps78c-pytorchnccltest-cori-gpu-shifter-net-ib-no-device-found-socket-fallback", "tail-40"): "false all-clear",
    ("net-gaps78c-pytorchnccltest-cori-gpu-shifter-net-ib-no-device-found-socket-fallback", "tail-15"): "false all-clear",
    ("net-gaps78c-pytorchnccltest-cori-gpu-shifter-net-ib-no-device-found-socket-fallback", "no-nccl-info"): "false all-clear",
    ("net-gaps78c-pytorchnccltest-cori-gpu-shifter-net-ib-no-device-found-socket-fallback", "lexicon-only"): "false all-clear",

    # the store-based barrier's INFO line is no line of the failure lexicon (a wait while ranks start is none): what
    # makes it a failure is its counts, more workers than the world size, and the lexicon's lines alone leave nothing
    ("net-gaps78f-metaseq86-store-based-barrier-world-size-2-worker-count-3-350m-model-parallel", "lexicon-only"):
        "false all-clear",
    # the loader's line cut at 80 columns inside '(required by': two short lines, the continuation ('red by
    # /.singularity.d/libs/...') not joined back; the piece before it still holds the loader's refusal of the symbol
    # version, read as a program built for a newer host, since what says the library was bound from the host by --nv
    # is on the continuation
    ("gpu-gaps80e-apptainer945-nv-host-libgldispatch-glibc-2-34-not-found-focal-image", "wrap-80"): "wrong cause",

    # two lines of 100 characters, wrapped at 80 in the middle of the symbol version ('version `GLIB' / 'C_2.32' not
    # found'): nccl/unwrap.py's width() does not tell from four lines that they were wrapped, and neither piece
    # holds the loader's words 'version `...' not found' whole
    ("gpu-gaps80d-migparted329-mig-manager-chroot-host-nvidia-mig-parted-glibc-2-34-not-found-rhel8", "wrap-80"):
        "false all-clear",
    ("cf-gaps65e-mpi4pyex11-rpi-cluster-openmpi-btl-tcp-connect-link-local-169-254", "anon-angle"): "missed",
    ("gpu-gaps64f-herro-homelab-incident-vfio-2080ti-d3cold-to-d0-device-inaccessible-flr-timeout", "anon-angle"): "missed",
    ("net-awsdoeks69-vllm-ray-actorhandle-then-gloo-loopback-127001", "anon-angle"): "wrong cause",
    ("net-csdn-blog-2-node-nccl248-connect-no-route-to-host-firewall", "anon-angle"): "wrong cause",
    ("net-gaps64b-awsomedt192-srun-label-flattened-socketstartconnect-loopback-connection-abort", "anon-angle"): "missed",
    ("net-gaps64b-pytorch15592-gloo-ioexception-connect-127-0-1-1-refused-gloo-socket-ifname", "anon-angle"): "missed",
    ("net-gaps78c-nerscpytorchtesting-cori-gpu-shifter-bootstrap-ib0-no-route-to-host-socket-ifname-eth", "anon-angle"): "partly",
    ("net-gitcode-blog-vllm-3x4090-socket-connect-abort-spare-server-ifname", "anon-angle"): "missed",
    ("net-nccl187-hostname-prefix-collision-p2p-ipc-across-hosts", "anon-angle"): "missed",
    # the two ranks on one GPU are read from their NCCL INFO 'Init START' lines (one busId, one commId): without them
    # only the RuntimeError's 'invalid usage' is left, an unexplained failure line
    ("gpu-gaps81a-trtllm9263-prefill-pod-two-ranks-init-start-one-busid-invalid-usage", "no-nccl-info"): "missed",
    ("gpu-gaps81a-trtllm9263-prefill-pod-two-ranks-init-start-one-busid-invalid-usage", "lexicon-only"): "missed",
    # the two ranks share a node only where their 'Init START' lines name one host: with the host redacted, ranks of
    # several nodes would read as one node's, so a shared busId names no cause (nccl/checks.py, _shared_bus_id)
    ("gpu-gaps81a-trtllm9263-prefill-pod-two-ranks-init-start-one-busid-invalid-usage", "anon-x"): "missed",
    ("gpu-gaps81a-trtllm9263-prefill-pod-two-ranks-init-start-one-busid-invalid-usage", "anon-redacted"): "missed",
    ("gpu-gaps81a-trtllm9263-prefill-pod-two-ranks-init-start-one-busid-invalid-usage", "anon-angle"): "missed",
    # an nccl-tests table with no other line: its result rows run together into one line are not cut back into rows
    # (WHY["paragraphs"]), so the header stands without a result and reads as a run that hung before its first one
    ("net-gaps83c-dstack3961-2x-p6-b200-efa-nccl-tests-all-reduce-table-healthy", "paragraphs"): "false alarm",
    # NCCL's WARN wrapped at 80 columns after 'real path of': the sysfs path that the row reads is on the next line,
    # so the WARN is surfaced (unexplained) without the path that names the missing PCI node
    ("gpu-gaps85a-nccl442-wsl-nccl283-all-reduce-perf-could-not-find-real-path-pci-bus", "wrap-80"): "missed",
    # TCPStore's refusal folded at its blanks: 'was requested but PyTorch' ends the first line and 'was build without
    # libuv support' begins the next, so the failure line is surfaced (unexplained) without the words the row reads
    ("node-gaps85a-pytorch139990-windows-tcpstore-use-libuv-requested-built-without-libuv", "fold-s-80"): "missed",
    # the posted 'ml' run is 19 lines: its last 15 are the module lines Lmod offers to load and an 'ml show' of one of
    # them; Lmod's error line above them is cut away, and nothing left says anything failed
    ("node-gaps85c-lmod828-ml-nccl-openmpi-cuda-hierarchy-exist-but-cannot-be-loaded", "tail-15"): "false all-clear",
    # Lmod's error line wrapped at 80 columns: 'exist but cannot be loaded as requested' runs on to the next line, so
    # the line is surfaced by its 'error:' (unexplained) without the words the row reads
    ("node-gaps85c-lmod828-ml-nccl-openmpi-cuda-hierarchy-exist-but-cannot-be-loaded", "wrap-80"): "missed",
}

#: the healthy runs given a fail/warn diagnosis once transformed: what is misread, and why
FALSE_ALARMS: Dict[Tuple[str, str], str] = {
    ("net-gaps83c-dstack3961-2x-p6-b200-efa-nccl-tests-all-reduce-table-healthy", "paragraphs"): (
        "the six result rows, run together into one line after the joined header, are not cut back into rows (a "
        "paragraph is cut only at a record's start: nccl-tests' rows are none), so nccl-tests' reader sees its "
        "header and no result row and the run reads as one that stopped before its first collective (the ACS/IOMMU "
        "hang of a one-host run): the text holds no NCCL line, launcher prefix or time that would cut it"),
}
