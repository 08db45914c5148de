"""The compiled core against the Python engine on drawn configurations: HDD profiles, write cache
(off / volatile, segments or bytes, idle or mixed destage, window, merge size, FUA honoured or not),
SPTF or FIFO, dual-actuator drives (both exposures, the drive or one LUN), the block layer
(mq-deadline / bfq / none, queue depth, nr_requests, the host's write-cache setting) and fio jobs
(directions, mixes, block sizes and bssplit, spans with offsets drawn with replacement, fsync /
fdatasync / end_fsync / sync, numjobs, ramp). Each draw must give identical fio JSON and device
statistics. The draws come from a fixed seed, so a failure names a reproducible configuration."""

from __future__ import annotations

import random

import pytest

from simulator.core import run_fio_compiled
from simulator.devices.blocklayer import BlockLayer, BlockLayerConfig
from simulator.devices.registry import build_device
from simulator.engine import Simulation
from simulator.fio.writer import to_fio_json
from simulator.workloads.runner import run_fio

_PROFILES = ["hdd/seagate_st91000640ns", "hdd/quantum_atlas_10k", "hdd/seagate_cheetah_15k7", "hdd/toshiba_mg06sca10te"]


def _draw(rng: random.Random):
    dual = rng.random() < 0.25
    cache: dict = {"write_cache": rng.choice(["volatile", "volatile", "off"])}
    if rng.random() < 0.3:
        cache["dirty_segments"] = rng.choice([0, 4, 16, 64])
    if rng.random() < 0.2:
        cache["destage"] = "mixed"
    if rng.random() < 0.2:
        cache["destage_window"] = rng.choice([1, 4, 64])
    if rng.random() < 0.2:
        cache["fua_supported"] = False
    if rng.random() < 0.2:
        cache["destage_merge"] = rng.choice(["0", "64k", "1m"])
    params: dict = {"cache": cache}
    if rng.random() < 0.2:
        params["queue"] = {"policy": "fifo"}
    if dual and rng.random() < 0.5:
        params["actuators"] = {"exposure": "lba_halves"}
    job = {"name": "j", "ioengine": rng.choice(["libaio", "libaio", "psync"]), "sim_slat": rng.choice([0, "2us"]),
           "rw": rng.choice(["randrw", "randwrite", "randread", "rw", "write"]),
           "iodepth": rng.choice([1, 4, 16, 32, 64]), "number_ios": 1500, "bs": rng.choice(["512", "4k", "16k", "64k"])}  # fmt: skip
    if job["rw"] in ("randrw", "rw"):
        job["rwmixread"] = rng.choice([10, 50, 90])
    if rng.random() < 0.5:
        job.update(size=rng.choice(["256k", "2m", "64m"]), io_size="1g", norandommap=1)
    if rng.random() < 0.4:
        job[rng.choice(["fsync", "fdatasync"])] = rng.choice([1, 3, 16])
    if rng.random() < 0.2:
        job["end_fsync"] = 1
    if rng.random() < 0.2:
        job["sync"] = 1
    if rng.random() < 0.3:
        job["numjobs"] = rng.choice([2, 3])
    if rng.random() < 0.2:
        job["ramp_time"] = "0.05s"
    if rng.random() < 0.15 and job["rw"] in ("randread", "randwrite", "write"):
        job["bssplit"] = "512/20:4k/50:64k/30"
    blk = None
    if rng.random() < 0.5:
        blk = {"scheduler": rng.choice(["mq-deadline", "mq-deadline", "none", "bfq"])}
        if rng.random() < 0.3:
            blk["queue_depth"] = rng.choice([1, 4, 8])
        if rng.random() < 0.2:
            blk["nr_requests"] = rng.choice([4, 16])
        if rng.random() < 0.2:
            blk["write_cache"] = rng.choice(["write back", "write through"])
    target = "dev" if not dual or rng.random() < 0.6 else rng.choice([0, 1])
    profile = "hdd/seagate_exos_2x14" if dual else rng.choice(_PROFILES)
    return {"profile": profile, "params": params}, job, blk, target, rng.randrange(1, 100)


def _run(spec, job, blk, target, seed, runner):
    sim = Simulation(seed)
    dev = build_device(spec, "dev", sim.root)
    tgt = dev if target == "dev" else dev.actuators[target]
    if blk is not None:
        tgt = BlockLayer("blk", tgt, tgt, BlockLayerConfig(**blk))
    res = runner(sim, [tgt], job)
    return to_fio_json(res, {}, time_str="t", sim_meta={}, timestamp=0), tgt.stats(), dev.stats(), sim.now


_DRAWS = [_draw(random.Random(1000 + i)) for i in range(16)]


@pytest.mark.parametrize("i", range(len(_DRAWS)))
def test_drawn_configuration_identical_to_python(i):
    spec, job, blk, target, seed = _DRAWS[i]
    compiled = _run(spec, job, blk, target, seed, run_fio_compiled)  # raises Unsupported if not covered
    assert compiled == _run(spec, job, blk, target, seed, run_fio), (spec, job, blk, target, seed)
    doc = compiled[0]
    ios = sum(j[d]["total_ios"] for j in doc["jobs"] for d in ("read", "write"))
    assert ios == 1500 * len(doc["jobs"])  # number_ios per job, exactly once
