"""Array layout of the compiled core: column indices of the state tables and the event kinds.

Every table is a numpy array; a row is one component (thread, device, request, event), a column
one field. The names below are the only place the indices are defined (``build`` and ``loop``
import them), so a field cannot mean two things.
"""

from __future__ import annotations

from collections import namedtuple

# ---- run status returned by run_until
ST_TIME = 0  # reached the time limit (a control point)
ST_DONE = 1  # every job thread finished
ST_REFILL = 2  # a buffer (offsets, uniforms, completion log) needs Python's attention
ST_EMPTY = 3  # nothing left to do (no event) although threads are not done: a modelling bug

# ---- event kinds (the heap's "kind" column; target and argument depend on the kind)
EV_DONE = 0  # target device, argument request: the device completed the request
EV_RAMP = 1  # target thread: end of ramp_time
EV_SUBMIT = 2  # target thread, argument request: submission latency over, the request reaches its device
EV_MECHFREE = 3  # target device (HDD): the mechanism is free while the host link drains a read
EV_DESTAGE = 4  # target device (HDD), argument extent: a destage of cached write data finished
EV_BEGIN = 5  # target thread: startdelay over
EV_ARRIVAL = 6  # target thread: an open-loop arrival (its exact due time is the thread's TF_NEXTARR)
EV_TIMESTOP = 7  # target thread: open loop, end of runtime
EV_APPEND_WRITE = 8  # target device (HDD, media_cache): the log's write pointer is under the head: write the append
EV_APPEND_DONE = 9  # target device (HDD, media_cache), argument extents in the append: the append is on the platter
EV_SSD_DIE = 10  # target device (SSD), argument die: the die's transaction batch ended (devices.ssd.kernels)
EV_SSD_META = 11  # target device (SSD): the forced flush's metadata commit ended
EV_MC_IDLE = 12  # target device (HDD, media_cache): the idle timer of cache.cleaning_idle_delay may have expired

# ---- global integers
GI_SEQ = 0  # events scheduled so far (tie-break: SimPy's event id order)
GI_HN = 1  # events in the heap
GI_LOGN = 2  # completions in the log not yet handed to the statistics
GI_LOW = 3  # 1 = some buffer is low: return to Python before the next event
GI_ACTIVE = 4  # job threads not finished
GI_FREE = 5  # free request slots (stack size)
GI_EVENTS = 6  # events processed (statistics)
NGI = 8
GF_NOW = 0
NGF = 2

# ---- requests (pool rows)
RI_OP = 0
RI_OFF = 1
RI_SIZE = 2
RI_THR = 3
RI_DEV = 4
RI_FUA = 5
RI_BLK = 6  # its way through a block layer: 0 straight to the device, 1 queued, 2 a FLUSH at the device as it is, 3 the block layer's own FLUSH
RI_AUX = 7  # the block layer's own FLUSH: the row of ``brun`` listing the flushes it completes; a request sleeping for a tag: the next request of its batch (the same submitter, BlockLayer.submit_batch), -1 none
RI_PAR = 8  # a part of a dual-actuator drive's request: the request (row) it is part of
RI_LEFT = 9  # a dual-actuator drive's request: parts not yet completed
NRI = 10
RF_TISSUE = 0  # the thread issued it (before the submission latency)
RF_TSUB = 1  # it reached the device
RF_TSTART = 2  # the device started it
RF_SERVICE = 3  # pure service time the device spent on it
NRF = 4

# ---- job threads
TI_DEV = 0
TI_DEPTH = 1
TI_INFL = 2
TI_DDIR = 3
TI_BS = 4
TI_FUA = 5
TI_LIMON = 6
TI_ISSUING = 7
TI_DONE = 8
TI_CIOS = 9
TI_CBYTES = 10
TI_IFBYTES = 11
TI_IOSLIM = 12  # -1 = none
TI_OFFPOS = 13
TI_OFFLEN = 14
TI_RECORD = 15  # 1 = record completions in the log
TI_RATE = 16  # 1 = open loop (rate_iops)
TI_POISSON = 17
TI_BACKLOG = 18  # arrivals waiting for a free slot
TI_ARRIVALS = 19  # arrivals so far (linear rate: the k-th is due at t0 + k / rate)
TI_STOPSCHED = 20
TI_RPOS = 21  # rate uniforms buffer: next
TI_RLEN = 22  # rate uniforms buffer: valid length
TI_MIXED = 23  # 1 = rw/randrw: the direction of each IO is fio's rwmix choice
TI_MIXREAD = 24  # rwmixread, percent
TI_RWDDIR = 25  # rwmix: current direction
TI_RWISS = 26  # rwmix: issues of the current direction before the next draw
TI_ISS = 27  # issues per direction since the ramp ended (3 columns: read, write, trim)
TI_WISS = 30  # writes issued since the ramp ended (the fsync cadence)
TI_SYNCDUE = 31  # 1 = a flush goes before the next IO
TI_FSYNCN = 32  # fsync=N (0 none)
TI_FDSYNCN = 33  # fdatasync=N (0 none)
TI_FLINFL = 34  # flushes in flight
TI_BLOCKING = 35  # 1 = flushes block the thread (synchronous engines)
TI_BLOCKER = 36  # the request blocking the thread, -1 none
TI_ENDFSYNC = 37  # 1 = end_fsync (a job that writes)
TI_ENDSYNCS = 38  # end flushes still to issue
TI_BS1 = 39  # write block size (TI_BS: the read's, or the only direction's)
TI_OFFMODE = 40  # 0 one offset stream for every direction, 1 one per direction (writes in offw)
TI_OFFPOSW = 41
TI_OFFLENW = 42
TI_MPOS = 43  # rwmix uniforms buffer: next
TI_MLEN = 44  # rwmix uniforms buffer: valid length
TI_VARBS = 45  # 1 = block sizes vary per IO (bssplit/bsrange): bsz holds each IO's, beside its offset
NTI = 46
TF_TREC = 0  # end of ramp: completions from here on are recorded
TF_TSTOP = 1  # end of runtime (inf = none)
TF_RAMP = 2
TF_RUNTIME = 3  # inf = none
TF_SLAT = 4
TF_CPUFREE = 5
TF_TEND = 6
TF_BYTESLIM = 7  # inf = none
TF_T0 = 8
TF_DELAY = 9  # startdelay
TF_RATE = 10  # arrivals per second (open loop)
TF_NEXTARR = 11  # due time of the pending arrival
NTF = 12

# ---- devices (common accounting, the same fields as devices.base.Device)
DK_QUEUE = 0
DK_HDD = 1
DK_BLK = 2  # a block layer (devices.blocklayer.BlockLayer) in front of a device of another kind
DK_DUAL = 3  # a dual-actuator drive (devices.hdd.drive.DualActuatorHDD): two HDD rows sharing one link
DK_SSD = 4  # an SSD (devices.ssd.device.SSD): its state is the ``s*`` arrays, row = the SSD's index
DA_T0 = 0
DA_TQ = 1
DA_QAREA = 2
DA_INSIDE = 3
DA_BUSY = 4
DA_COMP = 5  # 4 columns, per op
DA_BYTES = 9  # 4 columns, per op
NDA = 13

# ---- queue devices
QI_SERVERS = 0
QI_FREE = 1
QI_HEAD = 2  # FIFO ring: first element
QI_CNT = 3  # FIFO ring: elements
QI_DIST = 4  # 0 deterministic, 1 exponential, 2 uniform, 3 lognormal, 4 erlang
QI_K = 5  # erlang phases
QI_UPOS = 6  # uniforms buffer: next
QI_ULEN = 7  # uniforms buffer: valid length
QI_NEED = 8  # uniforms that must be available before an event is processed
NQI = 9
QF_P0 = 0  # deterministic value / mean / low
QF_P1 = 1  # high / cv
QF_BW = 2  # bytes per second, 0 = none
QF_FLUSH = 3
NQF = 4

# ---- HDDs (beside the kernels' own par/cq/seg/... arrays)
HI_N = 0  # candidates in cq
HI_NHOST = 1
HI_WIN = 2
HI_OUT = 3  # outstanding (admitted) host commands
HI_SEQ = 4
HI_BUSY = 5
HI_MECH = 6  # request on the mechanism, -1 none
HI_STREAM = 7
HI_QD = 8
HI_WINDOW = 9
HI_WC = 10  # the write-cache mode (wcache_kernels WC_*): 0 off, 1 volatile, 2 persistent, 3 media_cache
HI_MAXSEG = 11
HI_NDIRTY = 12
HI_HQ_HEAD = 13
HI_HQ_CNT = 14
HI_DQ_HEAD = 15
HI_DQ_CNT = 16
HI_BL_HEAD = 17
HI_BL_CNT = 18
HI_LK_N = 19
HI_EFREE = 20
HI_READHITS = 21
HI_DESTAGED = 22
HI_DESTAGED_BYTES = 23
HI_IDLE = 24  # destage when idle
HI_SS = 25
HI_FUA_OK = 26
HI_MERGE = 27
HI_NLIVE = 28  # extents in the write cache (accepted, not yet destaged): ``hlive[:HI_NLIVE]``
HI_FL_N = 29  # FLUSH / FUA records waiting for destages (rows of ``hfl``)
HI_OVERWRITES = 30
HI_COALESCED = 31
HI_DIRTY_READ_HITS = 32
HI_PG = 33  # sectors per 4 KiB page (reads served from dirty data)
HI_LINK = 34  # the HDD row whose HI_LK_N / HF_LINK_BUSY / hlk hold this drive's host link (shared by actuators)
# media_cache (HI_WC 3): the DRAM stage is the ring ``hdr`` (extents not yet appended, oldest first;
# its first HI_MC_INAPP are in the append in progress), the cleaning list is ``hdq``
HI_MC_WCE = 35  # 1 = the DRAM stage is on (WCE=1), 0 = a write is acknowledged once appended
HI_NDRAM = 36  # extents in the DRAM stage (including those in the append in progress)
HI_DR_HEAD = 37
HI_DR_CNT = 38
HI_MC_INAPP = 39  # extents in the append in progress (at the head of ``hdr``)
HI_MC_OWE = 40  # cleaning writes owed since the last append
HI_MC_ILV = 41  # cleaning writes owed after each append (cache.cleaning_interleave)
HI_APPENDS = 42
HI_MC_LOG = 43  # sectors appended so far: the log's write pointer
# cache.queued_write_candidates (volatile): queued writes the full cache refused, still reordering
# candidates: ``hqw[h, :HI_QW_N]``, oldest first
HI_QWC = 44  # 1 = the mode is on
HI_QW_N = 45
HI_DIRECT = 46  # such writes written home directly (picked by the scheduler)
# the write cache's index (``hidx[h]``, wcache_kernels' three hash maps): entries per map in use, a
# power of two; the maps are rows [0, HI_IXCAP] of the drive's worst-case block (header at row
# HI_IXCAP), doubled in place as HDD._grow_index does (loop._h_grow_index)
HI_IXCAP = 47
# the drive model's constant tables (zones ``hzt``, seek curve ``hsk``, seek interpolation ``htt``,
# move estimates ``het``): one row per distinct set, shared by the drives of one model (a cluster of
# 504 identical LUNs holds one copy that stays in cache, not 504)
HI_PROF = 48
# the extent table's slots in use (``hext``/``hlive``/``hefree``/``hdq``/``hdr`` rows [0, HI_ECAP) of the
# drive's worst-case block): the free-slot stack is coded against it (loop._h_efree) and the rings of
# extents (cleaning list, DRAM stage) wrap at it; doubled in place when the stack runs empty, as
# HDD._grow does (loop._h_grow_extents)
HI_ECAP = 49
HI_MC_WAKE = 50  # 1 = an EV_MC_IDLE wake-up is pending (HDD._mc_wake)
NHI = 51
HF_OVH_R = 0
HF_OVH_W = 1
HF_OVH_HIT = 2
HF_OVH_FLUSH = 3
HF_LRATE = 4
HF_MECH_END = 5
HF_WC_SIZE = 6
HF_DIRTY_BYTES = 7
HF_HW = 8
HF_LINK_BUSY = 9
HF_NV_ACK = 10  # persistent: time to make a write durable in the non-volatile cache before ack
HF_MC_BYTES = 11  # media_cache: data in the media cache not yet cleaned home, bytes
HF_MC_SIZE = 12
HF_MC_HW = 13  # cleaning watermark, bytes
HF_MC_BATCH = 14  # most bytes per append
HF_MC_CYL = 15  # the media cache's cylinder
HF_MC_SPT = 16  # sectors per track there
HF_MC_SPS = 17  # sectors per second there
HF_MC_SETUP = 18  # firmware set-up per append, s
HF_MC_DELAY = 19  # cache.cleaning_idle_delay, s (0 = idle cleaning at once)
HF_MC_TLAST = 20  # when the last host command completed (the idle timer's start), s
NHF = 21

# ---- dual-actuator drives (``xi`` rows)
XI_ACT0 = 0  # device index of actuator 0 (an HDD row), LBAs [0, half)
XI_ACT1 = 1  # actuator 1, LBAs [half, 2 half)
XI_HALF = 2  # bytes per actuator
NXI = 3

# ---- block layers (devices.blocklayer.BlockLayer)
BI_LOWER = 0  # the device below (index in the device tables)
BI_QDEPTH = 1  # requests at the device at once
BI_DEADLINE = 2  # 1 = mq-deadline / bfq (sector-sorted batches, deadlines), 0 = none (FIFO)
BI_FBATCH = 3  # requests per batch
BI_WSTARVED = 4  # read batches while writes wait before a write batch
BI_SKIPFL = 5  # 1 = complete a FLUSH at once (the device has no volatile write cache)
BI_TAGS = 6  # free tags
BI_ATDEV = 7  # requests (incl. flushes) at the device
BI_SEQ = 8  # scheduler insertion number
BI_NSCHED = 9  # requests in the scheduler
BI_NS = 10  # 2 columns: sorted entries per direction (deadline scheduler)
BI_LASTOFF = 12  # sort key (offset, seq) of the last dispatched request
BI_LASTSEQ = 13
BI_HASLAST = 14
BI_BDIR = 15  # direction of the current batch, -1 none
BI_BATCHING = 16
BI_STARVED = 17
BI_FQ_HEAD = 18  # scheduler none: FIFO ring of requests
BI_FQ_CNT = 19
BI_W_HEAD = 20  # requests waiting for a tag (ring)
BI_W_CNT = 21
BI_FW_HEAD = 22  # flushes holding a tag, waiting for a device slot (ring)
BI_FW_CNT = 23
BI_FLRUN = 24  # flush at the device: 0 none, 1 a request as it is, 2 the layer's own (merged list)
BI_NEXTSLOT = 25  # row of ``brun`` the next own FLUSH lists its requests in
BI_RUNN = 26  # 2 columns: requests listed per ``brun`` row
BI_PENDN = 28  # flushes merged into the next own FLUSH (``bpend``)
BI_NR = 29  # nr_requests
BI_TAG_WAITS = 30  # statistics (BlockLayer.reset_stats restarts them)
BI_MAX_WAITING = 31
BI_MAX_QUEUED = 32
BI_FL_SKIPPED = 33
BI_FL_MERGED = 34
BI_DEV_FLUSHES = 35
BI_DIRECT = 36
BI_READS_QUEUED = 37
BI_W_REQ = 38  # requests waiting for a tag (a sleeping batch counts each request left: BlockLayer.waiting())
NBI = 39
BF_EXPIRE = 0  # 2 columns: deadline per direction, s
BF_BUSY_SINCE = 2
BF_READ_WAIT = 3
NBF = 4
# sorted scheduler entries ``bso[b, direction, k]``: offset, insertion number, request
SO_OFF = 0
SO_SEQ = 1
SO_REQ = 2
NSO = 3

# FLUSH / FUA records (``hfl`` rows): the HDD write cache's record table, defined with its kernels
from simulator.devices.hdd.wcache_kernels import FL_ACK, FL_LEFT, FL_REQ, FL_SEQ, NFL  # noqa: E402,F401

#: the SSDs' arrays: field ``f`` of devices.ssd.kernels.SSDState stacked over the SSDs (leading axis)
SSD_FIELDS = tuple("s_" + f for f in (
    "si", "sf", "die", "dief", "pg", "pgf", "tx", "txf", "rq", "rqf", "scr", "ev", "order", "dirty",
    "geo", "l2p", "p2l", "bvalid", "bstate", "berase", "free_stack", "free_top", "front", "cnt", "gcout"))

#: every array of one compiled run (numba takes the namedtuple as one argument)
State = namedtuple(
    "State",
    [
        "gi", "gf",
        "ht", "hs", "hk", "hg", "ha",
        "rqi", "rqf", "rfree",
        "thi", "thf", "offs", "ru", "offw", "mu", "bsz",
        "lg", "lgt",
        "dvi", "dacc",
        "qi", "qf", "qring", "qu",
        "hpar", "hcq", "hcr", "hzt", "hsk", "htt", "het", "hseg",
        "hi", "hf", "hhq", "hlk", "hext", "hefree", "hdq", "hbl", "hlive", "hfl", "hidx", "hdr", "hqw",
        "bi", "bf", "bso", "bdl", "bfq", "bwt", "bfw", "brun", "bpend", "xi",
        *SSD_FIELDS,
    ],
)  # fmt: skip
