"""Configuration of a Ceph cluster (kind ``ceph_cluster``): frozen, documented pydantic models.

Defaults are Ceph 14.2 (Nautilus) defaults where Ceph has an option for the quantity (see
/work/shared/docs/device-facts.md section D and docs/ceph-model.md); CPU, network and metadata-size
figures are datasheet-class estimates marked as assumptions in the profiles' ``sources``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from simulator.config.base import ConfigModel
from simulator.devices.blocklayer import BlockLayerConfig
from simulator.units import Bytes, BytesPerSecond, Seconds

__all__ = [
    "RELEASE_DEFAULTS",
    "AutotuneConfig",
    "BalancerConfig",
    "BlockLayerConfig",
    "BlueStoreConfig",
    "CacheConfig",
    "ClientConfig",
    "ClusterConfig",
    "CpuConfig",
    "CrushConfig",
    "CrushRuleConfig",
    "DbDeviceConfig",
    "DriveGroupConfig",
    "ErasureCodeConfig",
    "FailureEventConfig",
    "FileStoreConfig",
    "HostConfig",
    "ImageConfig",
    "KrbdConfig",
    "NetworkConfig",
    "NicConfig",
    "OsdConfig",
    "PageCacheConfig",
    "PoolConfig",
    "RecoveryConfig",
    "release_defaults",
]

_NAME = r"^[A-Za-z0-9_\-]+$"


class CpuConfig(ConfigModel):
    """A host's processors, modelled as a pool of identical servers shared by everything on the host.

    Servers = round(cores x (1 + smt_gain x (threads_per_core - 1))): hyper-threads add throughput,
    not single-thread speed. Every CPU cost in the model is divided by ``speed``.
    """

    cores: int = Field(12, ge=1, le=4096, description="physical cores of the host (all sockets), count (default 12)")
    threads_per_core: int = Field(1, ge=1, le=8, description="hardware threads per core (SMT), count (default 1)")
    smt_gain: float = Field(
        0.25, ge=0.0, le=1.0,
        description="extra throughput of a core per additional hardware thread, fraction (default 0.25)",
    )
    speed: float = Field(
        1.0, gt=0.0, le=100.0, description="speed relative to the CPU the cost parameters refer to; costs are divided by it, at most 100 (default 1.0)"
    )
    wakeup_cost: Seconds = Field(
        0.0, ge=0, le=1e-3,
        description=(
            "extra CPU of a job that starts on an idle server (a sleeping thread woken: futex wake, context switch, "
            "cold caches); a job queued behind another runs back to back without it, so the CPU per IO falls as "
            "load batches the work. Source: the Ceph lab's CPU seconds per read falling with queue depth "
            "(calibration/ceph-lab/data/points.csv); 0 = off, seconds (default 0)"
        ),
    )

    stall_share: float = Field(
        0.0, ge=0.0, le=0.5,
        description=(
            "share of CPU jobs whose thread, after its work, waits off-CPU for a time slice while other work of "
            "the machine (not modelled) runs; the core stays free for the modelled jobs, the job's result comes "
            "stall_mean later on average (exponential). For a host shared with foreign load (the Ceph lab's VM); "
            "fraction (default 0 = off)"
        ),
    )
    stall_mean: Seconds = Field(
        0.0, ge=0.0, le=0.1,
        description="mean of the off-CPU wait of a stalled job (exponential), seconds (default 0 = off)",
    )
    background_share: float = Field(
        0.0, ge=0.0, le=0.9,
        description=(
            "share of every CPU job's cost that runs after the job's result is out (a hypothesis for the Ceph lab: "
            "op-history, stats and deferred-apply bookkeeping on the daemons' helper threads): it keeps the core "
            "busy, so it counts against throughput, but no IO waits for it. The lab's per-thread CPU counters bound "
            "it (calibration/ceph-lab/data/background/threads.csv); fraction (default 0 = off)"
        ),
    )
    foreign_cores: float = Field(
        0.0, ge=0.0, le=4096.0,
        description=(
            "mean number of cores kept busy by work of the machine that is not modelled (other processes, e.g. the "
            "Ceph lab VM's other jobs): Poisson jobs of mean foreign_slice, first come first served with the modelled "
            "jobs, so a saturated pool gives the model servers - foreign_cores cores; cores (default 0 = off)"
        ),
    )
    foreign_slice: Seconds = Field(
        0.0, ge=0.0, le=0.1,
        description=(
            "mean length of one foreign job (exponential): how long a modelled job that finds every core taken waits "
            "at most for one; seconds (default 0 = off)"
        ),
    )

    thread_wakeup_cost: Seconds = Field(
        0.0, ge=0, le=1e-3,
        description=(
            "per-THREAD wakeup rule (opt-in; the Ceph lab's hypothesis (a), docs/ceph-model.md 'Quiet campaign: "
            "per-thread wakeup rule'): extra CPU of a job whose daemon thread was asleep when the work arrived, i.e. "
            "the thread's previous job's result (plus its wake delay) was out before the job's arrival; a job that "
            "reaches a thread still busy with earlier work pays nothing. Threads: the client's submit and completion "
            "threads per image, each OSD's messenger, op-shard workers (one wake state per shard) and commit "
            "finisher, each BlueStore's kv_sync thread (replicated pools; EC, recovery and FileStore jobs are booked "
            "without it). Divided by speed like every cost. Cannot be combined with wakeup_cost (the per-core rule); "
            "seconds (default 0 = off)"
        ),
    )
    thread_wake_delay: Seconds = Field(
        0.0, ge=0, le=1e-3,
        description=(
            "off-CPU delay of a woken thread (scheduler latency: wakeup IPI, run-queue wait, context switch) under "
            "the per-thread wakeup rule: the job's result comes this much later and the core is free meanwhile; "
            "paid by the jobs that pay thread_wakeup_cost on a thread that sleeps on a queue inside its process "
            "(op-shard workers, commit finisher, kv_sync, the client's submit thread), not on socket-woken threads "
            "(messengers, the client's completion thread: their wake is inside network.loopback_latency). Source "
            "for the lab: BlueStore's "
            "op_before_dequeue_op_lat at QD1 (an idle op worker's enqueue-to-dequeue time); seconds (default 0 = off)"
        ),
    )

    @property
    def servers(self) -> int:
        return max(1, round(self.cores * (1.0 + self.smt_gain * (self.threads_per_core - 1))))

    @model_validator(mode="after")
    def _foreign_below_servers(self) -> CpuConfig:
        if self.foreign_cores >= self.servers:
            raise ValueError(f"foreign_cores ({self.foreign_cores}) must be below the host's servers ({self.servers}): "
                             "the foreign work alone would saturate the host")
        if self.wakeup_cost > 0 and (self.thread_wakeup_cost > 0 or self.thread_wake_delay > 0):
            raise ValueError("wakeup_cost (a wakeup per job that finds a core idle) and thread_wakeup_cost / "
                             "thread_wake_delay (a wakeup per job that finds its thread asleep) are two rules for the "
                             "same cost: set one of them")
        return self


class NicConfig(ConfigModel):
    """A host's network interface: each direction is a FIFO link serialising bytes at ``bandwidth``."""

    bandwidth: BytesPerSecond = Field("10Gbit/s", gt=0, le=1e12, description="line rate per direction, bytes/s (default 10Gbit/s)")


class NetworkConfig(ConfigModel):
    """The network between hosts (one switch) and inside a host (loopback)."""

    latency: Seconds = Field(
        "25us", ge=0, le=1.0, description="one-way latency host to host: switch + both kernel TCP stacks, seconds, at most 1 s (default 25us)"
    )
    loopback_latency: Seconds = Field(
        "10us", ge=0, le=1.0, description="one-way latency between two daemons on the same host, seconds, at most 1 s (default 10us)"
    )
    message_overhead: Bytes = Field(
        256, ge=0, le=1 << 20, description="bytes of messenger framing + op encoding added to every message's payload, at most 1 MiB (default 256)"
    )


class DriveGroupConfig(ConfigModel):
    """``count`` identical drives of one device spec, each giving one or more OSDs."""

    count: int = Field(1, ge=1, le=10000, description="number of identical drives (default 1)")
    device: dict[str, Any] = Field(
        description="device spec as everywhere else: {profile: hdd/<name>, params: {...}} or {kind: queue, params: {...}}"
    )
    device_class: str = Field("hdd", pattern=_NAME, description="CRUSH device class of these OSDs (default hdd)")
    split: Annotated[int, Field(le=64)] | Literal["luns"] = Field(
        1,
        description=(
            "OSDs per drive: an integer N = N equal LVM volumes (partitions) sharing the drive's actuator(s), at most "
            "64; 'luns' = one OSD per LUN child device (e.g. a dual-actuator MACH.2 drive) (default 1)"
        ),
    )
    lvm_offset: Bytes = Field(
        "1MiB", ge=0, le=2**40, description="bytes at the start of the drive taken by the LVM label/metadata before the first volume, at most 1 TiB (default 1MiB)"
    )
    weight: float | None = Field(
        None, gt=0, le=65535, description="CRUSH weight per OSD; default = its device capacity in TiB (as ceph-volume sets it); at most 65535 (CRUSH keeps weights in 16.16 fixed point)"
    )
    block_layer: BlockLayerConfig | None = Field(
        None, description="block layer in front of these drives; default: the cluster's block_layer"
    )

    @field_validator("split")
    @classmethod
    def _split_positive(cls, v: Any) -> Any:
        if isinstance(v, int) and v < 1:
            raise ValueError("split must be >= 1 or 'luns'")
        return v


class DbDeviceConfig(ConfigModel):
    """Separate DB/WAL devices of a host (e.g. one SSD carrying several HDD OSDs' RocksDB + WAL).

    The host's OSDs are assigned to the ``count`` devices in contiguous groups; each OSD gets a
    volume of ``db_size`` bytes on its device.
    """

    count: int = Field(1, ge=1, le=10000, description="number of DB/WAL devices in the host (default 1)")
    device: dict[str, Any] = Field(description="device spec of one DB/WAL device ({profile: ssd/..., params: {...}})")
    db_size: Bytes = Field("30GiB", gt=0, le=2**50, description="DB/WAL volume per OSD, bytes (default 30GiB)")
    block_layer: BlockLayerConfig | None = Field(
        None, description="block layer in front of these devices; default: the cluster's block_layer"
    )


class HostConfig(ConfigModel):
    """One host (or ``count`` identical hosts named <name>0, <name>1, ...)."""

    name: str = Field(pattern=_NAME, description="host name (no dots)")
    count: int = Field(1, ge=1, le=10000, description="number of identical hosts (default 1)")
    cpu: CpuConfig = Field(default_factory=CpuConfig, description="processors shared by the host's OSDs")
    nic: NicConfig = Field(default_factory=NicConfig, description="network interface (public = cluster network)")
    drives: list[DriveGroupConfig] = Field(default_factory=list, description="drive groups giving the host's OSDs")
    db_devices: DbDeviceConfig | None = Field(
        None, description="separate DB/WAL devices; default none = DB and WAL on each OSD's own device"
    )


class ClientConfig(ConfigModel):
    """The client host running fio with the rbd engine (librbd + librados)."""

    name: str = Field("client", pattern=_NAME, description="component name of the client host (default client)")
    cpu: CpuConfig = Field(default_factory=CpuConfig, description="client processors")
    nic: NicConfig = Field(default_factory=NicConfig, description="client network interface")
    submit_cost: Seconds = Field(
        "20us", ge=0, le=1.0, description="librbd + librados + messenger CPU to issue one object request, seconds, at most 1 s (default 20us)"
    )
    complete_cost: Seconds = Field(
        "10us", ge=0, le=1.0, description="CPU to receive a reply and complete the request in librbd, seconds, at most 1 s (default 10us)"
    )
    cost_per_byte: float = Field(
        0.0, ge=0, le=1e-6,
        description="client CPU per byte of data sent or received (copies, TCP, crc32c), seconds/byte, at most 1e-6 (1 MB/s of CPU per core) (default 0)",
    )
    write_cost: Seconds = Field(
        0.0, ge=0, le=0.01,
        description=(
            "extra client CPU to issue a write beyond submit_cost. Source: the Ceph lab's fio rbd client used 268 us "
            "per 4 KiB write and 98 us per read at QD1 (calibration/ceph-lab/data/points.csv); seconds (default 0)"
        ),
    )
    host: str | None = Field(
        None, pattern=_NAME,
        description=(
            "run the client on this OSD host (e.g. fio on a one-host lab): it then shares that host's CPU pool, its "
            "messages take the loopback latency and `cpu`/`nic` are unused; default none = its own host"
        ),
    )


class KrbdConfig(ConfigModel):
    """An image mapped by the kernel RBD client (``rbd map``): a block device ``/dev/rbdN`` with the Linux
    block layer (request tags, I/O scheduler, at most ``queue_depth`` requests handed to the RBD
    driver) in front of the image. fio reaches it as a file: ioengine=libaio, filename=<cluster>.<name>
    (e.g. ceph.rbd0). Defaults: the krbd map option queue_depth 128 (rbd(8) "Kernel rbd (krbd) options");
    blk-mq's default scheduler for a single hardware queue, mq-deadline."""

    name: str = Field(pattern=_NAME, description="block device name, the component fio's filename= names (e.g. rbd0)")
    pool: str = Field(description="pool of the image (its metadata pool when it has a data_pool)")
    image: str = Field(description="image name")
    queue_depth: int = Field(128, ge=1, le=4096, description="requests in flight to the RBD driver (rbd map -o queue_depth, default 128)")
    block_layer: BlockLayerConfig = Field(
        default_factory=BlockLayerConfig,
        description="the rbd device's block layer (its queue_depth is set from queue_depth above)",
    )
    file_size: Bytes | None = Field(
        None, gt=0, le=2**56,
        description=(
            "a preallocated file of this size in a filesystem on the device, read and written with direct IO: "
            "the component <name>_file, one contiguous extent at file_offset (XFS-like; no metadata IO) "
            "(default none); at most 2^56 (the largest image)"
        ),
    )
    file_offset: Bytes = Field("1MiB", ge=0, le=2**56, description="device offset of the file's extent, bytes, at most 2^56 (default 1MiB)")


class CrushRuleConfig(ConfigModel):
    """A replicated CRUSH rule: ``step take default [class X]; step chooseleaf firstn 0 type <fd>; emit``."""

    device_class: str | None = Field(None, description="only OSDs of this device class; default any class")
    failure_domain: Literal["osd", "host"] = Field(
        "host", description="no two replicas in the same bucket of this type (default host)"
    )


class ErasureCodeConfig(ConfigModel):
    """An erasure-code profile (``ceph osd erasure-code-profile set``): k data + m coding chunks per stripe.

    A stripe is ``k x stripe_unit`` bytes of an object: chunk i of stripe s is bytes
    [s*k*su + i*su, s*k*su + (i+1)*su) of the object and sits at [s*su, (s+1)*su) of shard i (shard i on
    the OSD at position i of the PG's acting set; shards k..k+m-1 hold the coding chunks).
    Defaults: encode/decode rates are ceph_erasure_code_benchmark figures of the jerasure plugin
    (k=6, m=2, Xeon E3-1245 V2: encode 4.2 GB/s, recover one lost chunk 10 GB/s, two 3.2 GB/s;
    L. Dachary, "Benchmarking Ceph erasure code plugins", ceph.com blog, 2013-12-21).
    """

    k: int = Field(2, ge=1, le=32, description="data chunks per stripe (profile k, default 2)")
    m: int = Field(2, ge=1, le=16, description="coding chunks per stripe (profile m, default 2)")
    stripe_unit: Bytes = Field(
        4096, ge=512, le=1 << 24,
        description="bytes of a data chunk per stripe (profile stripe_unit; osd_pool_erasure_code_stripe_unit, default 4096)",
    )
    allow_ec_overwrites: bool = Field(
        True,
        description=(
            "partial overwrites allowed (pool flag allow_ec_overwrites, required for RBD data; BlueStore only); "
            "false = an image in this pool is refused (default true)"
        ),
    )
    partial_writes: Literal["full_stripe", "touched_chunks"] = Field(
        "full_stripe",
        description=(
            "a write that does not cover whole stripes: full_stripe = read every data chunk of the partial "
            "stripes (k sub-reads), then write all k+m chunks of every touched stripe (ECBackend through Reef); "
            "touched_chunks = read only the data chunks of the partial stripes the write does not fully cover, "
            "then write the data chunks it touches + all m coding chunks (default full_stripe)"
        ),
    )
    partial_reads: bool = Field(
        False,
        description=(
            "a healthy read fetches only the data chunks covering its range; false = whole stripes from all k "
            "data shards, as ECBackend through Reef does (default false)"
        ),
    )
    encode_rate: BytesPerSecond = Field(
        "4.2GB/s", gt=0, le=1e12,
        description="primary CPU encode throughput per core over the stripes written, bytes/s, at most 1 TB/s (default 4.2GB/s, jerasure)",
    )
    decode_rate: BytesPerSecond = Field(
        "10GB/s", gt=0, le=1e12,
        description="primary CPU decode throughput per core to rebuild lost chunks from k shards, bytes/s, at most 1 TB/s (default 10GB/s, jerasure, one erasure)",
    )

    @property
    def stripe_width(self) -> int:
        return self.k * self.stripe_unit


class PoolConfig(ConfigModel):
    """A replicated or erasure-coded pool."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.\-]+$", description="pool name")
    id: int | None = Field(None, ge=0, le=2**31 - 1, description="pool id; default 1, 2, ... in list order (Ceph numbers pools from 1); at most 2^31-1")
    type: Literal["replicated", "erasure"] = Field("replicated", description="pool type (default replicated)")
    size: int = Field(3, ge=1, le=10, description="replicas (osd_pool_default_size, default 3); erasure pools: k+m, this field is ignored")
    min_size: int | None = Field(
        None, ge=1, le=48,
        description=(
            "replicas (shards) needed to serve IO; default size - size//2 (osd_pool_default_min_size 0); erasure: "
            "k + min(1, m-1), as the monitor sets it; at most 48 (the largest k+m)"
        ),
    )
    pg_num: int = Field(8, ge=1, le=1 << 20, description="placement groups (osd_pool_default_pg_num, default 8)")
    rule: CrushRuleConfig = Field(default_factory=CrushRuleConfig, description="CRUSH rule of the pool")
    erasure: ErasureCodeConfig | None = Field(
        None, description="erasure-code profile (type erasure; default k=2 m=2 when type is erasure)"
    )

    @model_validator(mode="after")
    def _erasure_profile(self) -> PoolConfig:
        if self.type == "replicated" and self.erasure is not None:
            raise ValueError("erasure profile given for a replicated pool: set type: erasure")
        return self

    @property
    def ec_profile(self) -> ErasureCodeConfig | None:
        """The erasure-code profile of an erasure pool (defaults if none given), None for replicated."""
        if self.type != "erasure":
            return None
        return self.erasure if self.erasure is not None else ErasureCodeConfig()

    @property
    def effective_size(self) -> int:
        ec = self.ec_profile
        return ec.k + ec.m if ec is not None else self.size

    @property
    def effective_min_size(self) -> int:
        if self.min_size is not None:
            return self.min_size
        ec = self.ec_profile
        if ec is not None:
            return ec.k + min(1, ec.m - 1)
        return self.size - self.size // 2


class ImageConfig(ConfigModel):
    """An RBD image (format 2, no striping: stripe_unit = object size, stripe_count = 1)."""

    pool: str = Field(description="pool holding the image")
    name: str = Field(description="image name (fio's rbdname)")
    size: Bytes = Field(gt=0, le=2**56, description="image size, bytes")
    order: int = Field(22, ge=12, le=26, description="object size = 2^order bytes (rbd_default_order, default 22 = 4MiB)")
    id: str | None = Field(
        None, pattern=r"^[0-9a-f]{6,32}$",
        description="image id in object names rbd_data.<id>.<objno>; default derived from pool+name (12 hex digits)",
    )
    prefilled: bool = Field(
        True, description="every object exists and is fully allocated before the runs, in object order (default true)"
    )
    client: str | None = Field(
        None, pattern=_NAME,
        description="the client host driving this image: one of `clients` by name; default the cluster's `client`",
    )
    data_pool: str | None = Field(
        None,
        description=(
            "pool holding the image's data objects (rbd create --data-pool, e.g. an erasure-coded pool); `pool` then "
            "holds only the header/metadata objects (not exercised by data IO); default none = `pool`"
        ),
    )


class OsdConfig(ConfigModel):
    """ceph-osd: messenger, sharded op queue, PG processing (CPU costs are per op on the host CPU pool)."""

    op_num_shards: int = Field(5, ge=1, le=1024, description="op queue shards per OSD (osd_op_num_shards_hdd, default 5)")
    op_num_threads_per_shard: int = Field(
        1, ge=1, le=64, description="worker threads per shard (osd_op_num_threads_per_shard_hdd, default 1, at most 64)"
    )
    msgr_recv_cost: Seconds = Field("30us", ge=0, le=1.0, description="CPU to receive and decode one message, seconds, at most 1 s (default 30us)")
    msgr_send_cost: Seconds = Field("30us", ge=0, le=1.0, description="CPU to encode and send one message, seconds, at most 1 s (default 30us)")
    msgr_cost_per_byte: float = Field(
        0.0, ge=0, le=1e-6,
        description="OSD-host CPU per byte of message data sent or received (copies, TCP, crc32c), seconds/byte, at most 1e-6 (1 MB/s of CPU per core) (default 0)",
    )
    read_cost: Seconds = Field("270us", ge=0, le=1.0, description="CPU of a client read in the PG + BlueStore, seconds, at most 1 s (default 270us)")
    write_cost: Seconds = Field(
        "650us", ge=0, le=1.0, description="CPU of a client write at the primary (PG log, txc prepare), seconds, at most 1 s (default 650us)"
    )
    subop_cost: Seconds = Field(
        "650us", ge=0, le=1.0, description="CPU of a replica write (MOSDRepOp) at a replica, seconds, at most 1 s (default 650us)"
    )
    reply_cost: Seconds = Field(
        "50us", ge=0, le=1.0, description="CPU at the primary to process one replica's commit reply, seconds, at most 1 s (default 50us)"
    )
    commit_cost: Seconds = Field(
        "20us", ge=0, le=1.0, description="CPU of the commit callback (finisher) per transaction, seconds, at most 1 s (default 20us)"
    )
    ec_subread_cost: Seconds = Field(
        "100us", ge=0, le=1.0,
        description=(
            "CPU of an erasure-coded shard sub-read (MOSDECSubOpRead: BlueStore read call, reply encoding) at the "
            "shard's OSD, seconds, at most 1 s (default 100us, an estimate)"
        ),
    )
    cost_cv: float = Field(
        0.0, ge=0, le=3,
        description=(
            "coefficient of variation of the op processing costs (read/write/subop/reply), drawn log-normal "
            "with the configured mean; 0 = deterministic (default 0)"
        ),
    )


class CacheConfig(ConfigModel):
    """BlueStore's data buffer cache of one OSD (and the base of FileStore's page-cache share)."""

    policy: Literal["2q", "lru"] = Field("2q", description="replacement policy (bluestore_cache_type, default 2q)")
    size: Bytes = Field(
        "205MiB", ge=0,
        le=2**56, description=(
            "bytes of data buffers per OSD (default 205MiB = bluestore_cache_size_hdd 1GiB x (1 - meta 0.4 - kv 0.4))"
        ),
    )
    kin_ratio: float = Field(0.5, ge=0, le=1, description="2Q: share of the cache for new (warm-in) buffers (default 0.5)")
    kout_ratio: float = Field(
        0.5, ge=0, le=4, description="2Q: ghost (warm-out) list length as a share of the cache (default 0.5)"
    )
    buffered_read: bool = Field(True, description="keep read data in the cache (bluestore_default_buffered_read, default true)")
    buffered_write: bool = Field(
        False, description="keep written data in the cache; false = a write drops its range (bluestore_default_buffered_write, default false)"
    )


class AutotuneConfig(ConfigModel):
    """BlueStore cache autotuning toward osd_memory_target (simulator.ceph.autotune). Defaults: Ceph options
    (src/common/options.cc: osd_memory_target 4 GiB, osd_memory_base 768 MiB, osd_memory_expected_fragmentation
    0.15, osd_memory_cache_min 128 MiB; bluestore_cache_autotune_interval 5 s; Nautilus meta/kv ratios 0.4/0.4)."""

    enabled: bool = Field(
        False,
        description=(
            "size the data and onode caches from the memory target instead of cache.size / onode_cache_size "
            "(bluestore_cache_autotune; Ceph's default is true, the model's false keeps profiles' fixed sizes) (default false)"
        ),
    )
    memory_target: Bytes = Field("4GiB", gt=0, le=2**44, description="OSD memory target (osd_memory_target, default 4GiB)")
    memory_base: Bytes = Field(
        "768MiB", ge=0, le=2**44, description="memory the OSD needs besides its caches (osd_memory_base, default 768MiB, at most 16 TiB)"
    )
    expected_fragmentation: float = Field(
        0.15, ge=0, lt=1, description="heap fragmentation allowed for (osd_memory_expected_fragmentation, default 0.15)"
    )
    cache_min: Bytes = Field("128MiB", ge=0, le=2**44, description="smallest total cache (osd_memory_cache_min, default 128MiB, at most 16 TiB)")
    meta_ratio: float = Field(0.4, ge=0, le=1, description="largest share of the onode cache (bluestore_cache_meta_ratio, default 0.4)")
    kv_ratio: float = Field(0.4, ge=0, le=1, description="share set aside for RocksDB's block cache (bluestore_cache_kv_ratio, default 0.4)")
    interval: Seconds = Field("5s", gt=0, le=3600.0, description="time between re-sizings (bluestore_cache_autotune_interval, default 5s, at most 1 h)")
    onode_bytes: Bytes = Field(4096, gt=0, le=1 << 20, description="memory of one cached onode with its extent map, bytes, at most 1 MiB (default 4096, an estimate)")

    @model_validator(mode="after")
    def _ratios(self) -> AutotuneConfig:
        if self.meta_ratio + self.kv_ratio > 1:
            raise ValueError("meta_ratio + kv_ratio must not exceed 1")
        return self


class BlueStoreConfig(ConfigModel):
    """BlueStore on one OSD (with RocksDB/BlueFS for metadata and the deferred-write WAL)."""

    block_size: Bytes = Field(4096, gt=0, le=1 << 20, description="device block size; reads and WAL appends are aligned to it, bytes, at most 1 MiB (default 4096)")
    prefer_deferred_size: Bytes = Field(
        32768, ge=0, le=1 << 30, description="writes up to this size are deferred through the WAL (bluestore_prefer_deferred_size_hdd, default 32KiB, at most 1 GiB)"
    )
    min_alloc_size: Bytes = Field(65536, gt=0, le=1 << 30, description="allocation unit (bluestore_min_alloc_size_hdd, default 64KiB, at most 1 GiB)")
    deferred_batch_ops: int = Field(
        64, ge=1, le=1000000,
        description=(
            "deferred writes queued (all PGs) before the pending batches are submitted; also when the deferred throttle "
            "is past half full (bluestore_deferred_batch_ops_hdd, default 64, at most 1e6)"
        ),
    )
    deferred_max_interval: Seconds | None = Field(
        None, ge=0, le=3600.0, description="submit pending deferred writes at least this often; default none (no such timer in 14.2.5); at most 1 h"
    )
    throttle_bytes: Bytes = Field(
        "64MiB", gt=0, le=2**40,
        description=(
            "transaction throttle: summed txc costs from submission until kv_sync takes the txc into a commit batch; "
            "a write blocks its op thread while it is full (bluestore_throttle_bytes, default 64MiB, at most 1 TiB)"
        ),
    )
    throttle_deferred_bytes: Bytes = Field(
        "128MiB", gt=0, le=2**40,
        description=(
            "deferred throttle: summed txc costs of deferred writes from submission until their in-place write is done; "
            "its limit is throttle_bytes + this (as BlueStore sets it); when full a deferred write submits all pending "
            "deferred batches (deferred_aggressive) and blocks its op thread (bluestore_throttle_deferred_bytes, default 128MiB, at most 1 TiB)"
        ),
    )
    throttle_cost_per_io: Bytes = Field(
        670000, ge=0, le=1 << 30,
        description=(
            "cost of one IO in both throttles: txc cost = (1 + data IOs) x this + bytes; a deferred write has no data IO "
            "(bluestore_throttle_cost_per_io_hdd 670000; _ssd 4000), bytes, at most 1 GiB (default 670000)"
        ),
    )
    max_deferred_txc: int = Field(
        32, ge=1, le=1000000,
        description=(
            "a PG (OpSequencer) with more unfinished transactions than this behind a queued deferred batch submits "
            "it (bluestore_max_deferred_txc, default 32, at most 1e6)"
        ),
    )
    kv_txc_bytes: Bytes = Field(
        1200, ge=0, le=1 << 24, description="RocksDB WAL bytes per transaction besides deferred data: onode, extent map, PG log entry, bytes, at most 16 MiB (default 1200)"
    )
    kv_commit_cost: Seconds = Field(
        0.0, ge=0, le=10e-3,
        description=(
            "CPU of one kv_sync commit cycle, whatever the number of transactions in it (RocksDB batch submit, WAL "
            "append and fsync calls, kv_finalize wakeups), booked on the OSD host's CPU before the WAL write; so the "
            "CPU per write falls as batches grow and the commit slows when the CPU is busy. Source: the Ceph lab's "
            "CPU per write against txcs per kv commit (calibration/ceph-lab/data/points.csv); 0 = off, seconds "
            "(default 0)"
        ),
    )
    kv_cleanup_bytes: Bytes = Field(
        64, ge=0, le=1 << 20, description="WAL bytes to delete one applied deferred record, bytes, at most 1 MiB (default 64)"
    )
    wal_size: Bytes = Field(
        "1GiB", gt=0, le=2**44, description="ring of recycled RocksDB WAL files the appends cycle through, bytes, at most 16 TiB (default 1GiB = 4 x 256MiB)"
    )
    wal_rewrite_tail: bool = Field(
        True,
        description=(
            "each WAL append starts at the block holding the previous append's partial tail and rewrites it, as "
            "BlueFS does; false = appends start at the next free block (default true)"
        ),
    )
    bluefs_log_write: bool = Field(
        False,
        description=(
            "each kv commit also appends one block to BlueFS's own log and flushes the WAL device again, after the "
            "WAL append's flush (BlueFS::_fsync logs the file's changed metadata: the Ceph lab counted 4,096 bytes "
            "logged per kv commit, calibration/ceph-lab/fixtures/perf_*-qd4.json, Ceph 16.2.15); false = one write "
            "and one flush per commit, as every fit so far assumed (default false)"
        ),
    )
    bluefs_log_size: Bytes = Field(
        "16MiB", gt=0, le=2**34,
        description="ring the BlueFS log appends cycle through before it is compacted and starts over "
        "(bluefs_log_compact_min_size), bytes, at most 16 GiB (default 16MiB)",
    )
    bluefs_size: Bytes = Field(
        "4GiB", gt=0, le=2**50, description="BlueFS extent (WAL ring + DB) on the OSD's device when no DB device, bytes, at most 1 PiB (default 4GiB)"
    )
    bluefs_position: float = Field(
        0.5, ge=0, le=1,
        description="start of the BlueFS extent as a fraction of the device (BlueStore puts it in the middle for HDDs, default 0.5)",
    )
    flush_before_commit: bool = Field(
        True,
        description=(
            "kv_sync flushes the data device before a commit: with a separate DB device every cycle (if data was "
            "written since the last flush); with DB on the data device only for batches with data writes (the WAL "
            "flush makes applied deferred writes stable); false = never (default true)"
        ),
    )
    onode_cache_size: int = Field(
        100000, ge=0, le=1000000000, description="onodes (object metadata) kept in memory per OSD, count (default 100000)"
    )
    onode_miss_read: Bytes = Field(
        4096, ge=0, le=1 << 26, description="bytes read from the DB region when an onode is not cached; 0 = no IO, at most 64 MiB (default 4096)"
    )
    onode_miss_cost: Seconds = Field("50us", ge=0, le=1.0, description="extra CPU to decode a missed onode, seconds, at most 1 s (default 50us)")
    cache_hit_cost: Seconds = Field("0us", ge=0, le=1.0, description="extra CPU for a read served from the buffer cache, seconds, at most 1 s (default 0)")
    read_unit: Bytes = Field(
        4096, gt=0, le=1 << 24, description="granularity of device reads and cached buffers (checksum block), bytes, at most 16 MiB (default 4096)"
    )
    cache: CacheConfig = Field(default_factory=CacheConfig, description="data buffer cache")
    autotune: AutotuneConfig = Field(
        default_factory=AutotuneConfig, description="cache autotuning toward osd_memory_target (off: the fixed sizes)"
    )


class PageCacheConfig(CacheConfig):
    """FileStore's share of the host page cache per OSD (reads and writes are buffered)."""

    size: Bytes = Field(
        "2GiB", ge=0,
        le=2**56, description="bytes of page cache per OSD: the host's RAM left after the OSD daemons, divided by its OSDs (default 2GiB, an assumption)",
    )
    buffered_write: bool = Field(True, description="written pages stay cached (buffered writes; default true)")


class FileStoreConfig(ConfigModel):
    """FileStore of one OSD (Jewel 10.2 / Luminous 12.2, XFS, writeahead journal): every write is first
    appended to the OSD's journal with O_DIRECT|O_DSYNC, acknowledged once journaled, then applied to
    the object's file in XFS through the page cache; the WBThrottle flusher and the periodic syncfs
    write the dirty pages in place. Defaults are Jewel's option defaults where FileStore has an option."""

    journal_size: Bytes = Field(
        "5GiB", gt=0, le=2**44,
        description=(
            "journal partition on the OSD's own drive when the host has no journal (db_devices) SSD, at the start of "
            "the drive as ceph-disk lays it out; with a journal SSD the whole db_size partition is the journal "
            "(osd_journal_size 5120 MB, default 5GiB, at most 16 TiB)"
        ),
    )
    journal_block_size: Bytes = Field(4096, gt=0, le=1 << 20, description="journal alignment of every entry (journal_block_size, default 4096, at most 1 MiB)")
    max_write_size: Bytes = Field(
        "90MiB", gt=0, le=2**32,
        description="largest client write; a journal that cannot hold it is refused, as FileJournal does (osd_max_write_size, default 90MiB, at most 4 GiB)",
    )
    journal_entry_header: Bytes = Field(
        40, ge=0, le=1 << 20, description="entry_header_t written before and after every entry, bytes, at most 1 MiB (default 40)"
    )
    txn_bytes: Bytes = Field(
        1200, ge=0, le=1 << 24,
        description=(
            "encoded transaction besides the data: op list, object name, object_info and snapset xattrs, PG log "
            "entry and info as omap keys, bytes, at most 16 MiB (default 1200, same estimate as BlueStore's kv_txc_bytes)"
        ),
    )
    journal_align_min_size: Bytes = Field(
        65536, ge=0, le=1 << 30,
        description="data of at least this size is page-aligned inside its entry (pre_pad) (journal_align_min_size, default 64KiB, at most 1 GiB)",
    )
    journal_max_write_bytes: Bytes = Field(
        "10MiB", gt=0, le=2**32, description="bytes of entries the journal writer puts in one write (journal_max_write_bytes, default 10MiB, at most 4 GiB)"
    )
    journal_max_write_entries: int = Field(
        100, ge=1, le=1000000, description="entries the journal writer puts in one write (journal_max_write_entries, default 100, at most 1e6)"
    )
    journal_aio: bool = Field(
        True,
        description=(
            "libaio journal writes: with n writes in flight a new one starts once 2^min(2n,24) bytes are queued "
            "(FileJournal's adaptive rule); false = one synchronous O_DSYNC write at a time (journal_aio, default true)"
        ),
    )
    journal_queue_max_ops: int = Field(
        300, ge=0, le=10**7, description="entries queued for or in a journal write before queue_transactions blocks (journal_queue_max_ops, default 300, at most 1e7)"
    )
    journal_queue_max_bytes: Bytes = Field(
        "32MiB", ge=0, le=2**40, description="bytes queued for or in a journal write before queue_transactions blocks (journal_queue_max_bytes, default 32MiB, at most 1 TiB)"
    )
    queue_max_ops: int = Field(
        50, ge=0, le=10**7,
        description="transactions submitted and not yet applied before queue_transactions blocks (filestore_queue_max_ops, default 50, at most 1e7)",
    )
    queue_max_bytes: Bytes = Field(
        "100MiB", ge=0, le=2**40,
        description="bytes submitted and not yet applied before queue_transactions blocks (filestore_queue_max_bytes, default 100MiB, at most 1 TiB)",
    )
    op_threads: int = Field(2, ge=1, le=1024, description="apply threads; one transaction per PG at a time (filestore_op_threads, default 2, at most 1024)")
    apply_cost: Seconds = Field(
        "100us", ge=0, le=1.0,
        description="CPU of applying one transaction: pwrite into the page cache, two setxattr, LevelDB omap put, seconds, at most 1 s (default 100us)",
    )
    min_sync_interval: Seconds = Field(
        "10ms", ge=0, le=3600.0, description="earliest next syncfs after one (filestore_min_sync_interval, default 0.01 s, at most 1 h)"
    )
    max_sync_interval: Seconds = Field(
        "5s", gt=0, le=3600.0,
        description=(
            "syncfs at least this often; earlier when the journal passes half full; journal space is freed when a "
            "sync completes (filestore_max_sync_interval, default 5 s, at most 1 h)"
        ),
    )
    wbthrottle: bool = Field(True, description="the WBThrottle flusher and hard limits (filestore_wbthrottle_enable, default true)")
    wb_ios_start_flusher: int = Field(
        500, ge=0, le=10**9, description="dirty writes at which the flusher starts fdatasync-ing the oldest files (filestore_wbthrottle_xfs_ios_start_flusher, default 500, at most 1e9)"
    )
    wb_ios_hard_limit: int = Field(
        5000, ge=1, le=10**9, description="dirty writes at which applies block (filestore_wbthrottle_xfs_ios_hard_limit, default 5000, at most 1e9)"
    )
    wb_bytes_start_flusher: Bytes = Field(
        "40MiB", ge=0, le=2**44, description="dirty bytes at which the flusher starts (filestore_wbthrottle_xfs_bytes_start_flusher, default 40MiB, at most 16 TiB)"
    )
    wb_bytes_hard_limit: Bytes = Field(
        "400MiB", gt=0, le=2**44, description="dirty bytes at which applies block (filestore_wbthrottle_xfs_bytes_hard_limit, default 400MiB, at most 16 TiB)"
    )
    wb_inodes_start_flusher: int = Field(
        500, ge=0, le=10**9, description="dirty files at which the flusher starts (filestore_wbthrottle_xfs_inodes_start_flusher, default 500, at most 1e9)"
    )
    wb_inodes_hard_limit: int = Field(
        5000, ge=1, le=10**9, description="dirty files at which applies block (filestore_wbthrottle_xfs_inodes_hard_limit, default 5000, at most 1e9)"
    )
    omap_bytes: Bytes = Field(
        500, ge=0, le=1 << 24,
        description="LevelDB log bytes per transaction (PG log entry, info) appended in the omap directory and written at sync, bytes, at most 16 MiB (default 500)",
    )
    xfs_log_bytes: Bytes = Field(
        512, ge=0, le=1 << 20, description="XFS log bytes per file whose inode a sync logs (mtime, size), bytes, at most 1 MiB (default 512)"
    )
    xfs_log_size: Bytes = Field("512MiB", gt=0, le=2**31, description="XFS internal log, in the middle of the data partition, bytes, at most 2 GiB (XFS's largest internal log is 2038 MiB) (default 512MiB)")
    inode_writeback: Bytes = Field(
        8192, ge=0, le=1 << 26,
        description=(
            "after a sync, xfsaild writes each logged inode's cluster in place, next to the file's data, in the "
            "background; 0 = off, bytes, at most 64 MiB (default 8192 = one inode cluster)"
        ),
    )
    inode_cache_size: int = Field(
        1000000, ge=0, le=10000000000, description="files whose inode and dentry the kernel keeps cached per OSD, count (default 1000000)"
    )
    inode_miss_read: Bytes = Field(
        4096, ge=0, le=1 << 26, description="bytes read next to the file to load a missed inode; 0 = no IO, at most 64 MiB (default 4096)"
    )
    inode_miss_cost: Seconds = Field("30us", ge=0, le=1.0, description="extra CPU of a path lookup that misses the caches, seconds, at most 1 s (default 30us)")
    page_cache: PageCacheConfig = Field(
        default_factory=PageCacheConfig,
        description="the host page cache's share per OSD (2q stands for Linux's active/inactive lists)",
    )
    read_unit: Bytes = Field(4096, gt=0, le=1 << 24, description="page size: granularity of cached pages and device reads, bytes, at most 16 MiB (default 4096)")
    cache_hit_cost: Seconds = Field("0us", ge=0, le=1.0, description="extra CPU for a read served from the page cache, seconds, at most 1 s (default 0)")


class RecoveryConfig(ConfigModel):
    """Recovery and backfill after an OSD is marked out (PG remapping), and the op-queue scheduler's share.

    Defaults: Nautilus option values (osd_max_backfills 1, osd_recovery_max_active 3, osd_recovery_sleep_hdd
    0.1 s / _ssd 0 / _hybrid 0.025 s, osd_recovery_max_chunk 8 MiB, osd_op_queue wpq; e.g. `ceph daemon osd.0
    config show` of 13.2 quoted at blog.csdn.net/u010953692/article/details/111909604, Red Hat Ceph Storage
    configuration guide "Recovery"). mClock (osd_op_queue mclock_scheduler, the default from Quincy; set by
    ceph_release quincy): the recovery sleeps are 0 and background recovery gets its profile's reservation of
    the OSD's capacity (osd_mclock_max_capacity_iops_hdd 315 / _ssd 21500, osd_mclock_max_sequential_bandwidth_hdd
    150 MB/s / _ssd 1200 MB/s; profiles in src/osd/scheduler/mClockScheduler.cc: high_client_ops client 60 % /
    recovery 40 %, balanced 50 / 50, high_recovery_ops 30 / 70).
    """

    op_queue: Literal["wpq", "mclock_scheduler"] = Field(
        "wpq", description="OSD op-queue scheduler (osd_op_queue: wpq through Pacific, mclock_scheduler from Quincy) (default wpq)"
    )
    mclock_profile: Literal["high_client_ops", "balanced", "high_recovery_ops"] = Field(
        "high_client_ops",
        description="mClock profile (osd_mclock_profile: high_client_ops in Quincy 17.2, balanced from Reef) (default high_client_ops)",
    )
    max_backfills: int = Field(
        1, ge=1, le=1000, description="PGs backfilling from and, separately, to one OSD at a time (osd_max_backfills, default 1)"
    )
    recovery_max_active: int = Field(
        3, ge=1, le=1000, description="recovery/backfill object ops in flight per primary OSD (osd_recovery_max_active, default 3)"
    )
    recovery_sleep: Seconds | None = Field(
        None, ge=0, le=60.0,
        description=(
            "pause before each next recovery op of an OSD under wpq; default by device: osd_recovery_sleep_hdd 0.1 s, "
            "_hybrid 0.025 s (HDD data, DB on a db_devices SSD), _ssd 0 (rotational: false); 0 under mclock; at most 1 min"
        ),
    )
    recovery_max_chunk: Bytes = Field(
        "8MiB", gt=0, le=2**32, description="largest push of one recovery op; bigger objects take several (osd_recovery_max_chunk, default 8MiB, at most 4 GiB)"
    )
    mclock_max_capacity_iops: float | None = Field(
        None, gt=0, le=1e8, description="OSD capacity for mClock, IOPS; default 315 (hdd) / 21500 (ssd) (osd_mclock_max_capacity_iops_*); at most 1e8"
    )
    mclock_max_sequential_bandwidth: BytesPerSecond | None = Field(
        None, gt=0, le=1e12,
        description="OSD bandwidth for mClock, bytes/s; default 150MB/s (hdd) / 1200MB/s (ssd) (osd_mclock_max_sequential_bandwidth_*); at most 1 TB/s",
    )
    peering_time: Seconds = Field(
        "0.5s", ge=0, le=3600.0,
        description="a PG whose acting set changes serves no IO for this long (peering), seconds, at most 1 h (default 0.5s, an estimate)",
    )
    recovery_op_cost: Seconds = Field(
        "200us", ge=0, le=1.0,
        description="CPU of one recovery push at the source and again at the target (PG, messenger), seconds, at most 1 s (default 200us, an estimate)",
    )
    client_op_priority: int = Field(
        63, ge=1, le=63, description="wpq priority of client ops and their sub-ops (osd_client_op_priority, default 63, range 1-63)"
    )
    recovery_op_priority: int = Field(
        3, ge=1, le=63,
        description="wpq priority of recovery pushes and recovery sub-reads at their OSD (osd_recovery_op_priority, default 3, range 1-63)",
    )
    recovery_priority: int = Field(
        5, ge=1, le=63,
        description="wpq priority of the primary's recovery work item, the object read of a push (osd_recovery_priority, default 5)",
    )
    recovery_cost: Bytes = Field(
        "20MiB", gt=0, le=2**40, description="wpq cost of the primary's recovery work item (osd_recovery_cost, default 20MiB, at most 1 TiB)"
    )
    down_out_interval: Seconds | None = Field(
        "600s", ge=0, le=30 * 86400.0,
        description=(
            "an OSD down this long is marked out automatically (mon_osd_down_out_interval, default 600 s, at most 30 days); "
            "null = never (as with the noout flag)"
        ),
    )
    min_pg_log_entries: int = Field(
        3000, ge=1, le=10**8, description="PG log entries kept while a PG is clean (osd_min_pg_log_entries, default 3000 as Nautilus; 250 from Octopus, at most 1e8)"
    )
    max_pg_log_entries: int = Field(
        10000, ge=1, le=10**8, description="PG log entries kept while a PG is degraded (osd_max_pg_log_entries, default 10000, at most 1e8)"
    )
    target_pg_log_entries_per_osd: int | None = Field(
        None, ge=1, le=10**9,
        description=(
            "PG log entries an OSD keeps over all its PGs (osd_target_pg_log_entries_per_osd, Octopus+ 300000): a clean "
            "PG keeps this / the primary's PG count, within [min_pg_log_entries, max_pg_log_entries]; null = "
            "min_pg_log_entries (Nautilus), at most 1e9 (default null)"
        ),
    )
    partial_recovery: bool = Field(
        False,
        description=(
            "log-based recovery of a replicated pool pushes only the extents written while the OSD was away "
            "(partial object recovery, Octopus+; EC pools and backfill push whole objects) (default false: Nautilus)"
        ),
    )
    clean_region_max_intervals: int = Field(
        10, ge=1, le=1000,
        description=(
            "written extents tracked per object for partial recovery; beyond, the shortest clean gap is merged "
            "(osd_object_clean_region_max_num_intervals, default 10)"
        ),
    )
    backfill_scan_max: int = Field(
        512, ge=1, le=100000,
        description="objects listed per backfill scan of a PG's objects in hash order (osd_backfill_scan_max, default 512)",
    )
    backfill_scan_cost: Seconds = Field(
        "10us", ge=0, le=1.0,
        description=(
            "CPU per object listed by a backfill scan (key iteration and object_info decode), seconds "
            "(default 10us, an estimate); at most 1 s"
        ),
    )


class FailureEventConfig(ConfigModel):
    """A change of an OSD's (or every OSD of a host's) state at a time of the run (simulated time since the
    cluster was built). ``down``: PGs re-peer and run degraded on the others (no data moves). ``out``: also
    down; CRUSH maps the OSD's PG shards elsewhere (reweight 0) and recovery/backfill copies them there.
    ``up``: the OSD runs again; if it is in, its PGs re-peer with it and the objects written while it was down
    are recovered to it (log-based recovery, or backfill when the PG log no longer covers its absence).
    ``in``: the OSD runs and is in again (reweight 1): CRUSH maps its PGs back and they move back to it."""

    at: Seconds = Field(ge=0, le=30 * 86400.0, description="simulated time of the event, seconds since the cluster was built; at most 30 days")
    action: Literal["down", "out", "up", "in"] = Field(
        description="down (degraded, no remap), out (remap + backfill), up (back; log-based recovery), in (back and reweight 1)"
    )
    osd: int | None = Field(None, ge=0, le=2**31 - 1, description="OSD id (exactly one of osd, host); at most 2^31-1 (Ceph's OSD ids are 32-bit)")
    host: str | None = Field(None, pattern=_NAME, description="host name: all its OSDs (exactly one of osd, host)")

    @model_validator(mode="after")
    def _one_target(self) -> FailureEventConfig:
        if (self.osd is None) == (self.host is None):
            raise ValueError("give exactly one of osd, host")
        return self


class BalancerConfig(ConfigModel):
    """The mgr balancer in upmap mode: pg_upmap_items moving PG replicas from full to empty OSDs."""

    mode: Literal["none", "upmap"] = Field("none", description="none (Ceph's default) or upmap")
    max_deviation: int = Field(
        1, ge=0, le=1 << 20, description="stop when every OSD's PG count is within this many of its target, PGs, at most 2^20 (the largest pg_num) (default 1)"
    )
    max_iterations: int = Field(10000, ge=1, le=10**7, description="upper bound on moves, at most 1e7 (default 10000)")


class CrushConfig(ConfigModel):
    """CRUSH tunables (jewel/optimal profile of Nautilus)."""

    choose_total_tries: int = Field(50, ge=1, le=10000, description="retries before a replica slot is left empty, at most 10000 (default 50)")


# ------------------------------------------------------------------------------------------------ release switch
# Option defaults that differ between Ceph releases and between rotational (_hdd) and non-rotational (_ssd) data
# devices, as dotted keys of ClusterConfig. ``ceph_release`` fills them in wherever the profile does not set the
# field itself; without ``ceph_release`` the field defaults above (Nautilus 14.2.5, hdd) apply unchanged.
# Data cache = bluestore_cache_size_{hdd,ssd} x (1 - meta_ratio - kv_ratio [- kv_onode_ratio]), i.e. the cache
# WITHOUT autotuning; with bluestore_cache_autotune (default true since 14.2) the data cache grows towards what
# osd_memory_target leaves over, so a profile of a real cluster should set bluestore.cache.size from the OSD's
# perf dump (bluestore-pricache:data committed_bytes) -- the Ceph lab does.
# Sources:
#   nautilus: Ceph 14.2 options (docs/ceph-model.md, device-facts D; hdd data cache 205 MiB = the field default,
#             1 GiB x (1 - 0.4 - 0.4) rounded as that default is); bluestore_min_alloc_size_ssd 16K until
#             14.2.7, 4K from 14.2.8 (doc/releases/nautilus.rst, v14.2.8 notes) -- 16K here (croit ran 14.2.5)
#   octopus:  assumption: Nautilus 14.2.8+ values (no change of these options known to this project; unverified)
#   pacific:  measured: `ceph daemon osd.0 config show` of Ceph 16.2.15 (Debian bookworm), recorded in
#             calibration/ceph-lab/data/manifest.json (min_alloc 4K hdd+ssd, prefer_deferred_hdd 64K,
#             cache meta/kv/kv_onode ratios 0.45/0.45/0.04, op queue wpq). Lab finding: with autotuning the
#             buffers held ~100 MiB per OSD (not the ~300 MiB the autotuner committed), see docs/ceph-model.md
#   quincy:   assumption: Pacific values for these options (osd_op_queue becomes mclock_scheduler in 17.2, which
#             the model does not have: it keeps its FIFO shards); unverified
_MiB = 1 << 20
_COMMON_HDD = {"bluestore.deferred_batch_ops": 64, "bluestore.throttle_cost_per_io": 670000,
               "osd.op_num_shards": 5, "osd.op_num_threads_per_shard": 1}
#   recovery: osd_op_queue mclock_scheduler and osd_mclock_profile high_client_ops are Quincy 17.2 defaults
#             (ceph-users, 2022-11, "Quincy 17.2.5 ... the default profile is the HIGH_CLIENT_OPS"); osd_recovery_max_active_ssd
#             10 (Octopus+ option; kept to Quincy here)
_PACIFIC_RATIOS = {"bluestore.autotune.meta_ratio": 0.45, "bluestore.autotune.kv_ratio": 0.45}
_MCLOCK = {"recovery.op_queue": "mclock_scheduler", "recovery.mclock_profile": "high_client_ops"}
#   recovery (Octopus+): osd_min_pg_log_entries 250 with osd_target_pg_log_entries_per_osd 300000 (ceph/ceph PR #32683
#             "osd: trim pg logs based on a per-osd budget", merged 2020-01 before v15.2.0; options.cc of that tree:
#             set_default(250), set_default(300000)); partial object recovery of replicated pools
#             (docs.ceph.com/en/octopus/dev/osd_internals/partial_object_recovery, ObjectCleanRegion; not in Nautilus)
_OCTOPUS_RECOVERY = {"recovery.min_pg_log_entries": 250, "recovery.target_pg_log_entries_per_osd": 300000,
                     "recovery.partial_recovery": True}
_COMMON_SSD = {"bluestore.deferred_batch_ops": 16, "bluestore.throttle_cost_per_io": 4000,
               "osd.op_num_shards": 8, "osd.op_num_threads_per_shard": 2}
RELEASE_DEFAULTS: dict[str, dict[str, dict[str, Any]]] = {
    "nautilus": {
        "hdd": {**_COMMON_HDD, "bluestore.prefer_deferred_size": 32768, "bluestore.min_alloc_size": 65536,
                "bluestore.cache.size": 205 * _MiB},
        "ssd": {**_COMMON_SSD, "bluestore.prefer_deferred_size": 0, "bluestore.min_alloc_size": 16384,
                "bluestore.cache.size": int(3072 * _MiB * 0.2)},
    },
    "octopus": {
        "hdd": {**_COMMON_HDD, "bluestore.prefer_deferred_size": 32768, "bluestore.min_alloc_size": 65536,
                "bluestore.cache.size": 205 * _MiB, **_OCTOPUS_RECOVERY},
        "ssd": {**_COMMON_SSD, "bluestore.prefer_deferred_size": 0, "bluestore.min_alloc_size": 4096,
                "bluestore.cache.size": int(3072 * _MiB * 0.2), **_OCTOPUS_RECOVERY},
    },
    "pacific": {
        "hdd": {**_COMMON_HDD, "bluestore.prefer_deferred_size": 65536, "bluestore.min_alloc_size": 4096,
                "bluestore.cache.size": int(1024 * _MiB * 0.06), **_PACIFIC_RATIOS, **_OCTOPUS_RECOVERY},
        "ssd": {**_COMMON_SSD, "bluestore.prefer_deferred_size": 0, "bluestore.min_alloc_size": 4096,
                "bluestore.cache.size": int(3072 * _MiB * 0.06), **_PACIFIC_RATIOS, **_OCTOPUS_RECOVERY},
    },
    "quincy": {
        "hdd": {**_COMMON_HDD, "bluestore.prefer_deferred_size": 65536, "bluestore.min_alloc_size": 4096,
                "bluestore.cache.size": int(1024 * _MiB * 0.06), **_PACIFIC_RATIOS, **_MCLOCK, **_OCTOPUS_RECOVERY},
        "ssd": {**_COMMON_SSD, "bluestore.prefer_deferred_size": 0, "bluestore.min_alloc_size": 4096,
                "bluestore.cache.size": int(3072 * _MiB * 0.06), **_PACIFIC_RATIOS, **_MCLOCK, "recovery.recovery_max_active": 10,
                **_OCTOPUS_RECOVERY},
    },
}


def release_defaults(release: str, rotational: bool = True) -> dict[str, Any]:
    """The dotted-key option defaults of a Ceph release for rotational (_hdd) or non-rotational (_ssd) OSDs."""
    return dict(RELEASE_DEFAULTS[release]["hdd" if rotational else "ssd"])


class ClusterConfig(ConfigModel):
    """A Ceph cluster: hosts with OSDs on block devices, pools, RBD images, a client."""

    hosts: list[HostConfig] = Field(min_length=1, description="OSD hosts")
    client: ClientConfig = Field(default_factory=ClientConfig, description="the client host (fio + librbd)")
    clients: list[ClientConfig] = Field(
        default_factory=list,
        description="further client hosts (each its own CPU and NIC, or on an OSD host via `host`); an image names its client",
    )
    krbd: list[KrbdConfig] = Field(default_factory=list, description="images mapped by the kernel RBD client (block devices)")
    network: NetworkConfig = Field(default_factory=NetworkConfig, description="network between and inside hosts")
    pools: list[PoolConfig] = Field(min_length=1, description="replicated pools")
    images: list[ImageConfig] = Field(default_factory=list, description="RBD images")
    osd: OsdConfig = Field(default_factory=OsdConfig, description="ceph-osd parameters")
    objectstore: Literal["bluestore", "filestore"] = Field(
        "bluestore", description="OSD backend: bluestore (Nautilus) or filestore (Jewel/Luminous, XFS + journal) (default bluestore)"
    )
    bluestore: BlueStoreConfig = Field(default_factory=BlueStoreConfig, description="BlueStore parameters")
    filestore: FileStoreConfig = Field(default_factory=FileStoreConfig, description="FileStore parameters (objectstore: filestore)")
    balancer: BalancerConfig = Field(default_factory=BalancerConfig, description="PG balancer")
    crush: CrushConfig = Field(default_factory=CrushConfig, description="CRUSH tunables")
    recovery: RecoveryConfig = Field(default_factory=RecoveryConfig, description="recovery/backfill throttles and op-queue scheduler")
    events: list[FailureEventConfig] = Field(
        default_factory=list, description="OSD/host failures during the run, e.g. [{at: 60s, action: out, host: h3}]"
    )
    block_layer: BlockLayerConfig = Field(
        default_factory=BlockLayerConfig,
        description=(
            "Linux block layer in front of every OSD data device (per drive, or per LUN) and DB device: "
            "request tags (nr_requests), I/O scheduler, flush handling"
        ),
    )
    state_scale: float = Field(
        1.0,
        gt=0,
        le=1,
        description=(
            "time compression of replayed sweeps, dimensionless (default 1): BlueStore data-cache capacity and "
            "every drive's explicitly set cache.write_cache_size are multiplied by it, so that runs `state_scale` times as long as the measured ones keep the measured "
            "ratio of IOs per run to cached blocks (what decides how much of a replayed offset sequence earlier "
            "runs left in cache). E.g. 90 s runs standing for croit's 900 s runs: 0.1"
        ),
    )
    ceph_release: Literal["nautilus", "octopus", "pacific", "quincy"] | None = Field(
        None,
        description=(
            "Ceph release whose option defaults (deferred size, min_alloc_size, deferred batch, throttle cost per IO, "
            "op shards/threads, data cache size) fill every such field the profile does not set; none = the field "
            "defaults (Nautilus 14.2.5, hdd) (default none)"
        ),
    )
    rotational: bool = Field(
        True,
        description=(
            "the OSDs' data devices report rotational=1: with ceph_release, picks the _hdd (true) or _ssd (false) "
            "option defaults, as BlueStore and the OSD do from sysfs (default true)"
        ),
    )

    @model_validator(mode="before")
    @classmethod
    def _apply_release(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not data.get("ceph_release"):
            return data
        rel = data["ceph_release"]
        if rel not in RELEASE_DEFAULTS:
            return data  # the Literal field reports the bad value
        out = dict(data)
        for key, val in release_defaults(rel, bool(data.get("rotational", True))).items():
            parts = key.split(".")
            node = out
            for p in parts[:-1]:
                sub = node.get(p)
                if isinstance(sub, ConfigModel):
                    sub = sub.model_dump(exclude_unset=True)
                sub = dict(sub) if isinstance(sub, dict) else {}
                node[p] = sub
                node = sub
            node.setdefault(parts[-1], val)
        return out
