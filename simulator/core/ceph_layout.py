"""Array layout of the compiled Ceph core: column indices of its state tables and its event kinds.

A row is one component (CPU pool, NIC link, host, OSD, op-queue shard, PG, image, object op, client
request, random stream), a column one field. These names are the only place the indices are
defined (``ceph_build`` and ``ceph_loop`` import them). See docs/design.md, "Compiled core: Ceph".
"""

from __future__ import annotations

from collections import namedtuple

# ---- run status returned by the loop
ST_TIME = 0  # reached the time limit
ST_DONE = 1  # every client request completed (and nothing is left in the heap)
ST_REFILL = 2  # a random stream is low: Python refills it, then the loop goes on
ST_EMPTY = 3  # no event left although requests are outstanding (a modelling bug)
ST_FULL = 4  # the op pool or the heap is full (sized too small by the builder)
ST_STOP = 5  # a closed loop that stops at its last completion (GI_CLOSED 2) reached it: EV_STOP was processed

# ---- event kinds (heap column "kind"; target and argument per kind)
EV_ARRIVAL = 0  # target client request: it is issued (open loop) -> librbd submit
EV_RESUME = 1  # target continuation (FN_*), argument op: ``then`` after a stalled CPU job
EV_OSD_OP = 2  # argument op: a decoded message joins its shard's queue (Osd.on_op)
EV_WAKE = 3  # target shard: release the lazily finishing workers (Osd._wake)
EV_REQ_DONE = 4  # target client request: it completes (RbdImage._complete_after)
EV_EXTENT_DONE = 5  # argument op: one object op of a multi-object request is in (RbdImage._extent_done)
EV_PREPARED = 6  # argument op: a write's / repop's CPU job is over (Osd._write_prepared)
EV_DEV_DONE = 7  # target device, argument device request: a queue device completed it
EV_KV_IO = 8  # target OSD: kv_sync's CPU is over, its device work starts (BlueStore._kv_io)
EV_DEFER_TIMER = 9  # target OSD: BlueStore's deferred_max_interval timer
EV_READ_MISS = 10  # target OSD, argument op: a read's CPU job is over, its device read starts (Osd._read_miss)
EV_STOP = 11  # the end of a run that stops at its last completion (GI_CLOSED 2): scheduled by that completion, as
#             the Python runner's done event is (what was queued before it is processed, what comes after stays pending)
EV_EC = 12  # target EC_STEP_*, argument op: an erasure-coded client op's next step (simulator.ceph.ec)
EV_THINK_END = 13  # target job thread: its thinktime is over (JobThread._think_end)
EV_SUBMIT = 14  # target client request: submitted after its thread's submission latency (JobThread._on_slat)
EC_STEP_START = 0  # ec._read_start / ec._write_start (after the op's CPU job)
EC_STEP_WAFTER = 1  # ec._write_after_reads (the partial stripes are read, and decoded if degraded)

# ---- continuations of ``then`` (resources.then): what a stalled chain resumes with
FN_SEND_CLIENT_OP = 0  # Cluster.send_client_op
FN_REPLY_CLIENT = 1  # Osd._reply_client
FN_TO_CLIENT = 2  # Osd._to_client
FN_COMMIT_IN = 3  # Osd._commit_in (argument: the primary op)
FN_SEND_SUB = 4  # Osd._send_sub
FN_SEND_REPLY = 5  # Osd._send_reply
FN_EC_WRITE_SEND = 6  # ec._write_send (the stripes are encoded)
FN_EC_DECODE = 7  # ec._decode (argument: the last sub-read reply, at the primary)
FN_EC_REPLY_AT = 8  # ec._read_reply_at (a shard's data goes back to the primary)
FN_EC_SUBREAD_OUT = 9  # ec._subread_out; this and the ones below end their chain (``ceph_loop._leaf``)
FN_EC_SHARD_OUT = 10  # ec._shard_write_out
FN_EC_REPLY_OUT = 11  # ec._read_reply_out

# ---- op roles (simulator.ceph.osd)
CLIENT = 0
SUBOP = 1
REPLY = 2
EC_CLIENT = 3  # an erasure-coded pool's client op at its primary (ec.EC_CLIENT)
EC_SUBREAD = 4  # its read of one shard (ec.EC_SUBREAD)
EC_READREPLY = 5  # that read's reply at the primary (ec.EC_READREPLY)
EC_LOCALW = 6  # its write of the primary's own shard (ec._local_write: no worker held, committed to the primary op)

# ---- global integers / floats
GI_SEQ = 0  # events scheduled so far (tie-break: SimPy's event id order)
GI_HN = 1  # events in the heap
GI_EVENTS = 2  # events processed
GI_LOW = 3  # 1 = a random stream is low: return to Python
GI_OPFREE = 4  # free op rows (stack size)
GI_OUT = 5  # client requests not completed
GI_OVH = 6  # network message overhead, bytes
GI_FULL = 7  # 1 = a pool overflowed
GI_NEXTREQ = 8  # open loop: next request to issue (rows are issued in order)
GI_NREQ = 9  # open loop: requests in the table
GI_DEVFREE = 10  # free device-request rows (stack size)
GI_RECORD = 11  # closed loop: 1 = completions are recorded
GI_NDONE = 12  # completions recorded (closed loop log)
GI_NOFOLD = 13  # 1 = recovery configured: no dispatch on arrival
GI_CLOSED = 14  # 1 = closed loop: a completion issues the next request (GI_NEXTREQ); 2 = and the last completion schedules EV_STOP
GI_TXFREE = 15  # free txc rows (stack size)
GI_RELSH = 16  # scratch: a commit reply dispatched on arrival, its worker's shard / PG (see _deliver)
GI_RELPG = 17
GI_NCOMP = 18  # client requests completed so far (their rank: RQI_DSEQ)
GI_WHY = 19  # why the run was flagged void (GI_FULL): WHY_*
GI_READ_WRITTEN_OK = 20  # 1 = reads of written objects run compiled on every OSD the run reaches (BlueStore on a
# device the core runs: ceph_build._read_device_why is None); 0 = such a read voids the run (WHY_READ_WRITTEN)
GI_CACHELESS = GI_READ_WRITTEN_OK  # its former name (it never meant 'without a data cache'), for code in flight
GI_TICKS = 21  # cache autotuning (simulator.ceph.autotune, Autotuner): tunings so far (Autotuner.ticks)
GI_RUNTICKS = 22  # tunings in this state (the OSDs tuned in Python, outside the run, replay them at write back)
GI_TTARGET = 23  # osd_memory_target, bytes
GI_TBASE = 24  # osd_memory_base, bytes
GI_TMAX = 25  # the budget's bounds (Autotuner.max / min), bytes
GI_TMIN = 26
GI_ONODEB = 27  # onode_bytes
GI_NTHR = 28  # closed loop of several job threads: their number (each completion issues its thread's next row, ``trn``); 0 = rows in order (GI_NEXTREQ)
NGI = 29
WHY_POOL = 1  # the op, transaction or device-request rows or the heap ran out
WHY_STREAM = 2  # a random stream ran dry
WHY_READ_WRITTEN = 3  # a read of an object that exists (not compiled yet)
WHY_PATH = 4  # an event or continuation of a path not compiled yet
WHY_RESUME_PAST = 5  # a stalled chain resumed for a time already past (not covered)
WHY_KV_INNER = 6  # kv_sync would have to start inside its own cycle (not covered)
# 7: retired (a deferred batch waiting for block-layer tags: covered, core.loop.batch_sleep)
WHY_NO_DEVICE = 8  # an IO for a device without a row (an OSD outside the run's pools)
#: the message of each WHY_* code
WHY_TEXT = {
    WHY_POOL: "a row pool or the event heap ran out (sized too small by the builder)",
    WHY_STREAM: "a random stream ran dry between refills",
    WHY_READ_WRITTEN: "a read of an object that exists: reads of written objects (caches, device reads) are not compiled yet",
    WHY_PATH: "an event or continuation of a path the compiled core does not cover",
    WHY_RESUME_PAST: "a stalled chain resumed for a time already past (not covered)",
    WHY_KV_INNER: "kv_sync would have to start inside its own cycle (not covered)",
    WHY_NO_DEVICE: "an IO for a device the compiled core has no row for (an OSD outside the run's pools)",
}
GF_NOW = 0
GF_LAT = 1  # network latency, s
GF_LOOP = 2  # loopback latency, s
GF_RELT = 3  # scratch: the end of that commit reply's CPU job
GF_NEXTTUNE = 4  # the next cache tuning is due (Cluster.next_tune; inf = no autotuning)
GF_TUNEINT = 5  # its interval, s
GF_KVR = 6  # kv_ratio, meta_ratio
GF_METAR = 7
NGF = 8

# ---- random streams (one per Python component using ``self.rand``; rows of ``su``)
SI_POS = 0
SI_LEN = 1
NSI = 2
#: uniforms kept per stream (a refill tops it up); an event draws far fewer than SLOW
SLEN = 4096
SLOW = 256

# ---- CPU pools (resources.CpuPool)
CI_SERVERS = 0
CI_STALLED = 1
CI_JOBS = 2
CI_STALLS = 3
CI_STREAM = 4  # random stream row, -1 = none
CI_PLAIN = 5  # 1 = no wakeup, stall, background or foreign work (CpuPool._book_plain)
CI_THREADED = 6  # 1 = the per-thread wakeup rule is on (CpuPool._run_threads; the jobs' thread rows in ``thi``)
NCI = 7
CF_INV = 0
CF_WAKE = 1
CF_STALLP = 2
CF_STALLMEAN = 3
CF_BG = 4
CF_FGSLICE = 5
CF_FGGAP = 6
CF_FGNEXT = 7
CF_BUSY = 8
CF_FGBUSY = 9
CF_TWCOST = 10  # thread_wakeup_cost, reference CPU seconds (divided by speed when booked)
CF_TWDELAY = 11  # thread_wake_delay, s
NCF = 12

# ---- daemon threads (resources.CpuThread), for the per-thread wakeup rule: every thread of every host's pool
THI_QUEUED = 0  # 1 = it sleeps on a queue (pays the wake delay)
THI_JOBS = 1
THI_WAKES = 2
NTHI = 3
THF_UNTIL = 0  # the thread is awake until then (its latest result, or when it last took queued work)
NTHF = 1

# ---- links (resources.Link): one direction of a NIC
LF_BW = 0
LF_FREE = 1
LF_BUSY = 2
LF_BYTES = 3
NLF = 4

# ---- hosts
HI_CPU = 0
HI_TX = 1
HI_RX = 2
NHI = 3

# ---- OSDs (osd.Osd) and their configs
OI_HOST = 0
OI_CPU = 1
OI_NSHARDS = 2
OI_SHARD0 = 3  # first row of its shards
OI_JITTER = 4
OI_STREAM = 5  # random stream row of the OSD (cost jitter)
OI_UP = 6
OI_OPS = 7  # 4 columns: client ops by kind
OI_SUBOPS = 11
OI_REPLIES = 12
OI_BS = 13  # BlueStore row (= the OSD's row), -1 = none
OI_THMSGR = 14  # thread rows (``thi``): the messenger, the commit finisher
OI_THFINAL = 15
NOI = 16
OF_READ = 0
OF_WRITE = 1
OF_SUBOP = 2
OF_REPLY = 3
OF_COMMIT = 4
OF_SEND = 5
OF_RECV = 6
OF_PERBYTE = 7
OF_LN_S = 8
OF_LN_MU = 9
OF_ECSUB = 10  # ec_subread_cost
NOF = 11

# ---- op-queue shards (osd._Shard)
SHI_OSD = 0
SHI_FREE = 1
SHI_INFLIGHT = 2
SHI_QHEAD = 3  # queued ops: singly linked through OPI_NEXT, -1 = empty
SHI_QTAIL = 4
SHI_QCNT = 5
SHI_NLAZY = 6  # lazily finishing workers (rows of shl / shp)
SHI_TH = 7  # thread row of its workers (one wake state per shard)
NSHI = 8
SHF_WAKE_AT = 0  # -1 = no wake-up armed
NSHF = 1

# ---- PGs (osd.PG): rows of all pools, pool by pool
PGI_POOL = 0
PGI_PS = 1
PGI_PPOS = 2
PGI_SEED = 3
PGI_NACT = 4
NPGI = 5

#: ``pgb[pg, i]``: 1 = a worker of the OSD at acting position i holds the PG (its Osd.busy_pgs)

# ---- images (rbd.RbdImage)
II_POOL = 0
II_ORDER = 1
II_PG0 = 2  # row of the pool's PG ps=0
II_CLIENT = 3  # client host row
II_NOBJ = 4
II_PS0 = 5  # offset of its objects in ``obj_ps`` / ``obj_base``
II_SIZE = 6  # pool size (columns of its obj_base rows)
II_KEY = 7  # offset of its rows in obj_base (flattened: object * size + position)
II_KB = 8  # key_base (object key = key_base + object number)
II_THSUB = 9  # thread rows: fio's submit thread, librbd's completion thread
II_THCOMP = 10
II_SHSIZE = 11  # bytes of an object on each acting-set OSD (RbdImage.shard_size: the object, or one EC shard)
II_EC = 12  # 1 = an erasure-coded data pool (its profile below; ec.py)
II_K = 13
II_M = 14
II_SU = 15  # stripe_unit, bytes
II_PR = 16  # 1 = partial_reads
II_PW = 17  # partial_writes: 0 = full_stripe, 1 = touched_chunks
II_ECS = 18  # 11 columns: the pool's EcStats counters run up by this image (added to pool.ec_stats at write back)
NII = 29
#: EcStats counters, in II_ECS's columns
ECS_CREADS, ECS_CWRITES, ECS_DECB, ECS_DEGR, ECS_ENCB, ECS_FULL, ECS_RMW, ECS_SWB, ECS_SW, ECS_SRB, ECS_SR = range(11)
ECS_NAMES = ("client_reads", "client_writes", "decode_bytes", "degraded_reads", "encode_bytes", "full_stripe_writes",
             "rmw_writes", "shard_write_bytes", "shard_writes", "subread_bytes", "subreads")
IF_SUBMIT = 0
IF_COMPLETE = 1
IF_PERBYTE = 2
IF_WRITE = 3
IF_ENC = 4  # erasure code encode_rate, decode_rate, bytes/s
IF_DEC = 5
NIF = 6

# ---- object ops (osd.ObjOp), preallocated rows
OPI_KIND = 0
OPI_ROLE = 1
OPI_PG = 2
OPI_IMG = 3
OPI_OBJNO = 4
OPI_OFF = 5
OPI_LEN = 6
OPI_POS = 7
OPI_OSD = 8
OPI_PRIM = 9  # the primary op of a repop / reply
OPI_PENDING = 10
OPI_REQ = 11  # client request row
OPI_GROUP = 12  # 1 = part of a multi-object request
OPI_NEXT = 13  # next op in its shard queue
OPI_SHARD = 14
OPI_ONODE = 15
OPI_COST = 16  # BlueStore throttle cost
OPI_FN = 17  # continuation of a stalled ``then``
OPI_NEXTW = 18  # next op in a BlueStore waiter / kv / osr list
OPI_DEFER = 19  # 1 = deferred transaction
OPI_DOFF = 20  # deferred data: device offset (-1 none)
OPI_DLEN = 21
OPI_WALB = 22  # WAL bytes of its transaction
OPI_BASE = 23  # object's device offset on this OSD
OPI_DECODE = 24  # an EC op's bytes to decode (EcOp.decode)
OPI_S0 = 25  # an EC op's stripes (EcOp.stripes)
OPI_S1 = 26
NOPI = 27
OPF_T0 = 0
OPF_TLOCAL = 1
OPF_TFN = 2  # time argument of the stalled continuation
OPF_TWAIT = 3  # throttle wait start
NOPF = 4

# ---- client requests
RQI_IMG = 0
RQI_KIND = 1  # Op (0 read, 1 write, 3 flush) or RQ_ENDFLUSH
RQI_OFF = 2
RQI_SIZE = 3
RQI_LEFT = 4  # object ops not completed (multi-object)
RQI_DSEQ = 5  # its rank in completion order
RQI_THR = 6  # its job thread (GI_NTHR > 0)
RQI_LINK = 7  # the next row of its thread in issue order, -1 = none yet
RQI_ALINK = 8  # open loop (TR_OPEN): the next arrival of any thread, in arrival order (-1 = none)
NRQI = 9
RQF_TISSUE = 0
RQF_TDONE = 1
RQF_TARR = 2  # open loop: its arrival time (it is issued when its thread has a slot: RQF_TISSUE)
RQF_TSUB = 3  # its submission to the image (RQF_TISSUE + the thread's submission latency, sim_slat)
NRQF = 4
RQ_ENDFLUSH = 4  # RQI_KIND of a job's end_fsync flush (a flush issued once nothing of its thread is in flight)
# ---- job threads (GI_NTHR > 0): rows of ``trn``
TR_NEXT = 0  # its next row to issue, -1 = none queued
TR_BACK = 1  # open loop: rows arrived and not issued (its backlog: the first TR_BACK rows from TR_NEXT)
TR_INFL = 2  # requests in flight
TR_DEPTH = 3  # iodepth
TR_OPEN = 4  # 1 = open loop (rate_iops): arrivals issue, a completion takes the backlog's next
TR_BLOCKS = 5  # 1 = its flushes block the thread until they complete (fio's blocking engines: libaio)
TR_BLOCKER = 6  # the blocking flush in flight, -1 = none
TR_STALL = 7  # 1 = thinktime is due: no issue until it is over (JobThread._stall)
TR_THINKING = 8  # 1 = thinking (its think time runs: EV_THINK_END pending)
TR_TTCOUNT = 9  # IOs counted towards thinktime_blocks
TR_TTBLOCKS = 10  # thinktime_blocks, 0 = not counted (thinktime_iotime alone)
TR_TTON = 11  # 1 = thinktime_blocks counts issues, 0 = completions
TR_ISSUING = 12  # 1 until the thread stops at an issue attempt (its rows are over: JobThread._stop)
TR_FINAL = 13  # 1 = no row will be added to its chain (its IO limit, its runtime's end)
NTR = 14
#: ``trf``: per job thread, its TRF_* columns
TRF_TT = 0  # think time, s (0 = no thinktime)
TRF_IOTIME = 1  # thinktime_iotime, s (0 = off)
TRF_TTLAST = 2  # the last think's end (its start at first: JobThread._tt_last)
TRF_TSTOP = 3  # its runtime's end (a think is cut there)
TRF_TEND = 4  # the last think's end, -inf = none (the thread ends then if nothing follows)
TRF_SLAT = 5  # submission latency, s (sim_slat; 0 = submitted at issue)
TRF_CPUFREE = 6  # when its submitting CPU is free (JobThread._cpu_free: submissions are serial)
NTRF = 7

# ---- BlueStore, one row per OSD (bluestore.BlueStore)
BS_KVBUSY = 0
BS_KVQ_H = 1  # kv_queue: txcs linked through TX_NEXT
BS_KVQ_T = 2
BS_KVB_H = 3  # the batch being committed
BS_KVB_N = 4
BS_DONE_H = 5  # deferred_done: batches linked through TX_NEXTB (a batch: txcs through TX_NEXT)
BS_DONE_T = 6
BS_STAB_H = 7  # deferred_stable
BS_STAB_T = 8
BS_KVSTAB_H = 9  # _kv_stable
BS_KVSTAB_T = 10
BS_KVUNST_H = 11  # _kv_unstable
BS_KVUNST_T = 12
BS_DQ_H = 13  # _dq: sequencers with a pending batch, in queueing order (OS_DQPREV / OS_DQNEXT)
BS_DQ_T = 14
BS_DQSIZE = 15  # deferred_queue_size
BS_DTXCS = 16  # deferred_txcs
BS_AGGR = 17  # aggressive
BS_IOSF = 18  # io_since_flush
BS_TIMER = 19  # _timer_armed
BS_TBW_H = 20  # throttle_bytes waiters: ops through OPI_NEXTW
BS_TBW_T = 21
BS_DTW_H = 22  # deferred throttle waiters
BS_DTW_T = 23
BS_TBCUR = 24
BS_TBMAX = 25
BS_TBPEAK = 26
BS_DTCUR = 27
BS_DTMAX = 28
BS_DTPEAK = 29
BS_WALPOS = 30
BS_WALRING = 31
BS_BLOCK = 32
BS_PREFER = 33
BS_CPIO = 34
BS_KVTXCB = 35
BS_CLEANB = 36
BS_BATCHOPS = 37
BS_MAXTXC = 38
BS_SAMEDEV = 39
BS_FBC = 40  # flush_before_commit
BS_TAIL = 41  # wal_rewrite_tail
BS_DEV = 42  # device row of the data device
BS_WALDEV = 43
BS_CURSOR = 44
BS_ALLOCATED = 45
BS_MINALLOC = 46
BS_CAP = 47
BS_DSTART = 48
BS_BFS = 49
BS_BFE = 50
BS_KVBYTES = 51
BS_KVBATCHES = 52  # statistics (BlueStore.stats)
BS_KVTXCS = 53
BS_DEFOPS = 54
BS_DEFIOS = 55
BS_DEFBATCHES = 56
BS_DEFROUNDS = 57
BS_THROTTLED = 58
BS_THR_KV = 59
BS_THR_DEF = 60
BS_AGGSUB = 61
BS_MAXTXCSUB = 62
BS_DIRECT = 63
BS_DATAFLUSH = 64
BS_PEAKDTXCS = 65
BS_KVQ_N = 66
BS_UNIT = 67  # read_unit
BS_WALBASE = 68  # wal_base: the WAL ring's device offset
BS_LOGW = 69  # bluefs_log_write
BS_LOGBASE = 70  # log_base: BlueFS's log ring's device offset
BS_LOGPOS = 71
BS_LOGRING = 72
BS_THKV = 73  # thread row of kv_sync, -1 = none (the rule off)
BS_TUNED = 74  # 1 = the autotuner's tuning of this OSD runs in the core (an OSD of the run), 0 = replayed in Python
BS_TBUDGET = 75  # Autotuner.budget and its last split (Autotuner.last: budget, kv, meta, data, mapped), bytes
BS_TKV = 76
BS_TMETA = 77
BS_TDATA = 78
BS_TMAPPED = 79
NBSI = 80
BF_KVCPU = 0
BF_MAXINT = 1  # deferred_max_interval, -1 = none
BF_TWAIT = 2  # throttle_wait
BF_KVT0 = 3
BF_WALT0 = 4
BF_KVTIME = 5
BF_WALTIME = 6
BF_FLUSHT0 = 7  # start of the cycle's data-device FLUSH (BlueStore._flush_t0)
BF_FLUSHTIME = 8  # sum of the cycles' data-device FLUSH times (BlueStore.flush_time)
BF_KINR = 9  # the data cache's kin_ratio / kout_ratio (autotune re-sizes it)
BF_KOUTR = 10
NBSF = 11

# ---- BlueStore transactions (bluestore.Txc), preallocated rows
TX_OP = 0  # the op (until its commit callback)
TX_OSR = 1
TX_COST = 2
TX_DOFF = 3  # deferred data: device offset (-1 none)
TX_DLEN = 4
TX_WALB = 5
TX_HADIO = 6
TX_IODONE = 7
TX_NEXT = 8  # next txc of its list (kv queue, batch, sequencer queue / pending / running batch)
TX_NEXTB = 9  # next batch (on a batch's first txc)
TX_BLEN = 10  # txcs of the batch (on its first txc)
TX_CB = 11  # commit callback: CLIENT = Osd._local_committed, SUBOP = Osd._subop_committed
TX_OSD = 12
TX_KEY = 13  # object key, offset and length of its write (BlueStore.writing, write back)
TX_OFF = 14
TX_LEN = 15
NTXI = 16

# ---- OpSequencers (bluestore._Osr): one per (PG, acting position): row pg * pga.shape[1] + position
OS_QH = 0  # txcs waiting for their data IO (direct writes), in order
OS_QT = 1
OS_PH = 2  # pending deferred batch, -1 = none
OS_PT = 3
OS_PN = 4
OS_RUNNING = 5
OS_RH = 6  # running batch
OS_RN = 7
OS_RLEFT = 8  # its device IOs not completed
OS_LIVE = 9
OS_INDQ = 10
OS_DQPREV = 11
OS_DQNEXT = 12
NOSI = 13

# ---- BlueStore's devices: queue devices (devices.simple.QueueDevice; a Partition of one maps to its
# base device's row), or a device of the device core (``dev``, a core.layout.State: HDD, dual-actuator
# drive's LUN, block layer over either; a Partition of one is a row of its own with its offset shift)
DV_SERVERS = 0
DV_FREE = 1
DV_QH = 2  # FIFO of device requests through DR_NEXT
DV_QT = 3
DV_QN = 4
DV_DIST = 5  # 0 deterministic, 1 exponential
DV_STREAM = 6
DV_DONE = 7  # requests completed (statistics)
DV_CORE = 8  # -1: a queue device of this core; else the device-core device (row of ``dev.dvi``) requests go to
DV_SHIFT = 9  # device-core device: offset added to each request's (a Partition's start)
DV_PART = 10  # 1 = the row is a Partition over a device-core device: its accounting is kept in DVF_P_*
NDVI = 11
DVF_P0 = 0  # deterministic value / exponential mean
DVF_BW = 1  # bytes per second, 0 = none
DVF_FLUSH = 2
DVF_BUSY = 3  # server-seconds of service
# a Partition's accounting (Device + PassThroughBusy fields: window start, queue-depth integral,
# requests inside, busy since / busy time, completions and bytes per op)
DVF_P_T0 = 4
DVF_P_TQ = 5
DVF_P_QAREA = 6
DVF_P_INSIDE = 7
DVF_P_BSINCE = 8
DVF_P_BUSY = 9
DVF_P_COMP = 10  # 4 columns
DVF_P_BYTES = 14  # 4 columns
NDVF = 18

# ---- device requests
DR_DEV = 0
DR_OP = 1
DR_SIZE = 2
DR_PURP = 3  # what completes with it (DP_*)
DR_ARG = 4  # sequencer row (deferred), txc row (direct)
DR_OSD = 5
DR_NEXT = 6
NDRI = 7
DP_DATA_FLUSH = 0  # kv_sync's flush of the data device -> _kv_write
DP_WAL = 1  # the WAL write -> _kv_flush
DP_WAL_FLUSH = 2  # the WAL device's flush -> _kv_done
DP_DEFERRED = 3  # a deferred batch's in-place write -> _deferred_io_done
DP_DIRECT = 4  # a direct write to a new allocation -> _direct_done
DP_READ = 5  # a client read's data -> Osd._read_done

#: every array of one compiled Ceph run (numba takes the namedtuple as one argument)
CephState = namedtuple(
    "CephState",
    [
        "gi", "gf",
        "ht", "hs", "hk", "hg", "ha",
        "su", "si",
        "ci", "cf", "cfree", "thi", "thf",
        "lf", "hoi",
        "oi", "of",
        "shi", "shf", "shl", "shp",
        "pgi", "pga", "pgb",
        "imi", "imf", "obj_ps", "obj_base",
        "opi", "opf", "opfree",
        "rqi", "rqf", "trn", "trf",  # trn / trf: per job thread (GI_NTHR > 0) its TR_* / TRF_* columns
        "bsi", "bsf", "txi", "txfree", "osi", "dvi", "dvf", "dri", "drfree", "scr",
        "dev",  # the device core's State (core.layout) of the HDDs / block layers below BlueStore
        "oni", "onf", "okey", "oprev", "onext",  # the onode caches (ceph_onode, ON_* below)
        "dc",  # BlueStore's data caches and writing buffers (core.ceph_dcache.DCache)
    ],
)  # fmt: skip

# ---- the onode caches (bluestore.BlueStore.onodes, an LruCache per OSD; simulator.core.ceph_onode):
# ``oni`` / ``onf`` one row per OSD; LRU nodes: the rows of ``obj_base`` (object x acting position),
# then one per cached key outside the run's objects (``okey``: their keys); ``oprev`` / ``onext`` the
# links, -1 = none, ``oprev`` ceph_onode.OUT = not cached
ON_CAP = 0  # capacity (onode_cache_size), entries
ON_N = 1  # entries cached
ON_HEAD = 2  # oldest node, -1 = empty
ON_TAIL = 3  # youngest node
ON_HITS = 4  # lookups that found the onode (LruCache.hits)
ON_MISSES = 5
ON_MREAD = 6  # bytes of a miss's DB read (onode_miss_read aligned up to the block), 0 = no IO
ON_STREAM = 7  # random stream row of BlueStore (_db_offset), -1 = none (no miss can happen)
ON_DBBASE = 8  # BlueStore.db_base
ON_DBN = 9  # db_span // block
ON_BLOCK = 10
ON_MOVES = 11  # nodes appended at the young end (a hit moved there, a key added) since the build or the last write-back:
#   the write-back replays at most that many of the youngest (ceph_onode_build.write_back); 0 = the order is as built
NONI = 12
ONF_COST = 0  # onode_miss_cost, s
NONF = 1
DP_ONODE_READ = 16  # a read's onode DB read -> its data read (BlueStore._onode_read_done)
DP_ONODE_WRITE = 17  # a write's onode DB read -> Osd._write_onode_loaded
DP_LOG = 18  # BlueFS's log block after the WAL flush (bluefs_log_write) -> its flush
DP_LOG_FLUSH = 19  # that flush -> _kv_done

# ---- BlueStore's data cache (core.ceph_dcache): per-OSD columns of ``CephState.dc.oi``, its lists, globals
POL_LRU = 1  # DC_POLICY: bluestore_cache_type = lru (0 = no cache rows: an OSD outside the run)
POL_2Q = 2  # DC_POLICY: 2q
DC_IN = 0  # list: 2Q warm_in (LRU: the one list)
DC_OUT = 1  # list: 2Q warm_out (ghosts)
DC_HOT = 2  # list: 2Q hot
DC_POLICY = 0
DC_CAP = 1  # capacity, units
DC_KIN = 2  # 2Q: warm_in limit, units
DC_KOUT = 3  # 2Q: ghost limit, units
DC_BUFR = 4  # buffered_read
DC_BUFW = 5  # buffered_write
DC_UNIT = 6  # read unit, bytes
DC_HITS = 7  # cache.hits
DC_MISSES = 8  # cache.misses
DC_HEAD = 9  # 3 columns: first (oldest) entry of each list, -1 = empty
DC_TAIL = 12  # 3 columns: last entry
DC_UNITS = 15  # 3 columns: units on each list
DC_NW = 18  # writing buffers of the OSD
DC_WU = 19  # units in its writing buffers (the autotuner's mapped-memory estimate)
NDC = 20
DCG_TOP = 0  # entries ever used (the pool's untouched tail starts here)
DCG_FREE = 1  # free-stack size
DCG_MASK = 2  # hash buckets - 1
DCG_WTOP = 3  # writing buffers ever used
DCG_WFREE = 4
DCG_WMASK = 5
DCG_OVER = 6  # 1 = a pool ran out (a sizing bug: write_back refuses the run)
NDCG = 7
