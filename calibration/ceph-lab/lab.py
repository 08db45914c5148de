#!/usr/bin/env python3
"""The Ceph lab: a throw-away Ceph cluster on 127.0.0.1 as ground truth for the Ceph model.

    python calibration/ceph-lab/lab.py run CAMPAIGN.yaml [--out DIR] [--no-install]
    python calibration/ceph-lab/lab.py derive RUN_DIR [--data DIR]   # tables from a finished run directory
    python calibration/ceph-lab/lab.py down [--base DIR]             # clean up after a kill -9 (state file)
    python calibration/ceph-lab/lab.py check                         # what is installed / missing

``run`` installs what is missing (apt-get: ceph-mon ceph-osd ceph-mgr ceph-common fio; fio must list
the rbd engine), deploys one mon, one mgr and N BlueStore OSDs on loop devices backed by sparse files
on the local disk, creates and fills an RBD image and runs the campaign's sequences (see README.md).
Every run records fio json+, every OSD's ``perf dump`` before and after, CPU seconds per daemon and
the host's load average. Everything it starts (daemons, loop devices, directories) is recorded in a
state file and removed on exit, on SIGINT/SIGTERM/SIGHUP, and by ``down`` after a hard kill. It
refuses to start when its ports are in use or its base directory belongs to a live lab.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import fcntl
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import labparse

PACKAGES = ["ceph-mon", "ceph-osd", "ceph-mgr", "ceph-common", "fio"]
CLK_TCK = os.sysconf("SC_CLK_TCK")

DEFAULT_CLUSTER: dict[str, Any] = {
    "num_osds": 3,
    "osd_size": "4GiB",          # sparse backing file per OSD (loop device)
    "pool": "rbd",
    "pool_size": 3,
    "min_size": 2,
    "pg_num": 32,
    "image": "img",
    "image_size": "1GiB",
    "rotational": 1,             # written to /sys/block/loopN/queue/rotational: picks BlueStore's _hdd/_ssd options
    "loop_direct_io": True,      # losetup --direct-io=on: the loop device bypasses the host page cache
    "osd_memory_target": None,   # bytes; None = Ceph's default
    "bluestore_cache_autotune": None,
    "bluestore_cache_size": None,
    "osd_extra": {},             # more [osd] options
    "mon_v2_port": 13310,
    "mon_v1_port": 13311,
    "ms_port_min": 13320,
    "ms_port_max": 13399,
    "base": "/var/tmp/cephlab-13310",
}
DEFAULT_FIO = {"bs": "4k", "runtime": 20, "ramp_time": 0, "fill_bs": "4M", "fill_iodepth": 16}


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def parse_bytes(v: Any) -> int:
    if isinstance(v, int):
        return v
    s = str(v).strip()
    units = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    for u, m in sorted(units.items(), key=lambda x: -len(x[0])):
        if s.endswith(u):
            return int(float(s[: -len(u)]) * m)
    return int(s)


class LabError(Exception):
    pass


class Interrupted(BaseException):
    pass


def _on_signal(signum: int, _frame: Any) -> None:
    raise Interrupted(f"signal {signum}")


# ============================================================================ installation
def check_tools() -> list[str]:
    """Missing pieces (empty list = ready)."""
    missing = [b for b in ("ceph-mon", "ceph-osd", "ceph-mgr", "ceph", "rbd", "fio", "losetup") if not shutil.which(b)]
    if shutil.which("fio"):
        out = subprocess.run(["fio", "--enghelp"], capture_output=True, text=True).stdout
        if "rbd" not in out.split():
            missing.append("fio rbd engine")
    return missing


def install() -> None:
    missing = check_tools()
    if not missing:
        return
    log(f"installing {' '.join(PACKAGES)} (missing: {', '.join(missing)})")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-q"], check=True, env=env, stdout=subprocess.DEVNULL)
    subprocess.run(["apt-get", "install", "-y", "-q", *PACKAGES], check=True, env=env, stdout=subprocess.DEVNULL)
    missing = check_tools()
    if missing:
        raise LabError(f"still missing after apt-get: {', '.join(missing)}")


# ============================================================================ the cluster
class Lab:
    """One throw-away cluster; every resource it creates is written to ``state.json`` first."""

    def __init__(self, cl: dict[str, Any]):
        self.cl = {**DEFAULT_CLUSTER, **cl}
        self.base = Path(self.cl["base"])
        self.conf = self.base / "ceph.conf"
        self.data = self.base / "data"
        self.run = self.base / "run"
        self.logd = self.base / "log"
        self.state_path = self.base / "state.json"
        self.state: dict[str, Any] = {"pids": {}, "loops": [], "files": []}
        self._lock_fd: int | None = None
        self.env = dict(os.environ, CEPH_CONF=str(self.conf))
        self.last_window: dict[str, Any] | None = None  # per-thread CPU of fio's last steady-state window

    # ---------------------------------------------------------------- guards
    def acquire(self) -> None:
        self.base.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.base / "lock", os.O_CREAT | os.O_RDWR, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise LabError(f"{self.base} is in use by another lab (lock held)") from None
        self._lock_fd = fd
        if self.state_path.exists():
            log(f"leftovers of an earlier lab in {self.base}: cleaning them first")
            self.state = json.loads(self.state_path.read_text())
            self.teardown()
        ports = [self.cl["mon_v2_port"], self.cl["mon_v1_port"]]
        for p in ports:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                # SO_REUSEADDR as the mon itself binds: TIME_WAIT leftovers of our own last cluster do not count,
                # a live listener does
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    s.bind(("127.0.0.1", int(p)))
                except OSError:
                    raise LabError(f"port 127.0.0.1:{p} is in use; choose other mon ports in the campaign") from None

    def release(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def _save(self) -> None:
        self.state_path.write_text(json.dumps(self.state, indent=1))

    # ---------------------------------------------------------------- helpers
    def ceph(self, *args: str, timeout: float = 60, fmt_json: bool = False, check: bool = True) -> Any:
        cmd = ["ceph", "-c", str(self.conf), "--connect-timeout", "15", *args]
        if fmt_json:
            cmd += ["-f", "json"]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=self.env)
        if check and p.returncode != 0:
            raise LabError(f"{' '.join(args)} failed: {p.stderr.strip()[-300:]}")
        return json.loads(p.stdout) if fmt_json and p.stdout.strip() else p.stdout

    def admin(self, daemon: str, *args: str) -> Any:
        sock = self.run / f"ceph-{daemon}.asok"
        p = subprocess.run(["ceph", "--admin-daemon", str(sock), *args, "-f", "json"], capture_output=True,
                           text=True, timeout=60)
        if p.returncode != 0:
            raise LabError(f"admin socket {daemon} {' '.join(args)}: {p.stderr.strip()[-200:]}")
        return json.loads(p.stdout)

    def _pid_ok(self, pid: int) -> bool:
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return False
        return str(self.conf).encode() in cmd

    def start_daemon(self, name: str, *cmd: str) -> None:
        with open(self.logd / f"{name}.out", "ab") as out:  # the child keeps its own copy of the descriptor
            p = subprocess.Popen([*cmd, "-f", "-c", str(self.conf)], stdout=out, stderr=out, stdin=subprocess.DEVNULL,
                                 start_new_session=True)
        self.state["pids"][name] = p.pid
        self._save()

    def stop_daemons(self, names: list[str] | None = None) -> None:
        order = sorted(self.state["pids"], key=lambda n: {"osd": 0, "mgr": 1, "mon": 2}.get(n.split(".")[0], 3))
        names = [n for n in order if names is None or n in names]
        pids = {}
        for n in names:
            pid = self.state["pids"][n]
            if self._pid_ok(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
                pids[n] = pid
        # wait until the processes are really gone (an exiting process has an empty cmdline while it still
        # holds its pid-file lock and sockets), reaping our own children
        t_end = time.time() + 15
        while time.time() < t_end and any(_alive(p) for p in pids.values()):
            time.sleep(0.1)
        for n, p in pids.items():
            if _alive(p):
                log(f"{n} (pid {p}) ignored SIGTERM: SIGKILL")
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p, signal.SIGKILL)
        t_end = time.time() + 5
        while time.time() < t_end and any(_alive(p) for p in pids.values()):
            time.sleep(0.1)
        for n in names:
            self.state["pids"].pop(n, None)
        self._save()

    def wait_for(self, timeout: float, what: str, fn: Any) -> None:
        end = time.time() + timeout
        while True:
            try:
                if fn():
                    return
            except (LabError, subprocess.TimeoutExpired, json.JSONDecodeError, KeyError):
                pass
            if time.time() > end:
                raise LabError(f"timeout ({timeout:.0f} s) waiting for {what}")
            time.sleep(0.5)

    # ---------------------------------------------------------------- config
    def write_conf(self, fsid: str) -> None:
        c = self.cl
        mon = f"[v2:127.0.0.1:{c['mon_v2_port']},v1:127.0.0.1:{c['mon_v1_port']}]"
        osd_lines = [
            f"osd_data = {self.data}/$name",
            "osd_objectstore = bluestore",
            "bluestore_block_create = false",
            "bluestore_fsck_on_mkfs = false",
            "bluestore_fsck_on_mount = false",
        ]
        for k in ("osd_memory_target", "bluestore_cache_autotune", "bluestore_cache_size"):
            if c.get(k) is not None:
                v = c[k]
                v = str(v).lower() if isinstance(v, bool) else (parse_bytes(v) if "size" in k or "target" in k else v)
                osd_lines.append(f"{k} = {v}")
        for k, v in (c.get("osd_extra") or {}).items():
            osd_lines.append(f"{k} = {v}")
        per_osd = "".join(
            f"\n[osd.{i}]\nbluestore_block_path = {loop}\n" for i, loop in enumerate(self.state["loops"])
        )
        self.conf.write_text(f"""[global]
fsid = {fsid}
mon_host = {mon}
public_addr = 127.0.0.1
cluster_addr = 127.0.0.1
public_network = 127.0.0.0/8
ms_bind_ipv4 = true
ms_bind_ipv6 = false
ms_bind_port_min = {c['ms_port_min']}
ms_bind_port_max = {c['ms_port_max']}
auth_cluster_required = none
auth_service_required = none
auth_client_required = none
keyring = {self.base}/keyring
run_dir = {self.run}
admin_socket = {self.run}/$cluster-$name.asok
pid_file = {self.run}/$cluster-$name.pid
crash_dir = {self.data}/crash
log_file = {self.logd}/$cluster-$name.log
mon_cluster_log_file = {self.logd}/cluster.log
osd_pool_default_size = {c['pool_size']}
osd_pool_default_min_size = {c['min_size']}
osd_pool_default_pg_num = {c['pg_num']}
osd_pool_default_pgp_num = {c['pg_num']}
osd_pool_default_pg_autoscale_mode = off
osd_crush_chooseleaf_type = 0
mon_allow_pool_delete = true
mon_warn_on_pool_no_app = false
mgr_initial_modules = iostat
mon_warn_on_insecure_global_id_reclaim_allowed = false
auth_allow_insecure_global_id_reclaim = false

[mon]
mon_data = {self.data}/$name
mon_data_avail_warn = 1
mon_data_avail_crit = 0

[mgr]
mgr_data = {self.data}/$name

[osd]
{chr(10).join(osd_lines)}
{per_osd}
[client]
rbd_cache = false
admin_socket =
""")

    # ---------------------------------------------------------------- loops
    def make_loops(self) -> None:
        n = int(self.cl["num_osds"])
        size = parse_bytes(self.cl["osd_size"])
        for i in range(n):
            f = self.base / f"osd{i}.img"
            self.state["files"].append(str(f))
            self._save()
            with open(f, "wb") as fh:
                fh.truncate(size)
            args = ["losetup", "--find", "--show"]
            if self.cl["loop_direct_io"]:
                args.append("--direct-io=on")
            p = subprocess.run([*args, str(f)], capture_output=True, text=True)
            if p.returncode != 0:
                raise LabError(f"losetup failed: {p.stderr.strip()}")
            loop = p.stdout.strip()
            self.state["loops"].append(loop)
            self._save()
            dev = Path("/sys/block") / Path(loop).name / "queue"
            want = str(int(self.cl["rotational"]))
            with contextlib.suppress(OSError):
                (dev / "rotational").write_text(want)
            got = (dev / "rotational").read_text().strip()
            if got != want:
                # fall back to BlueStore's own switch
                self.cl.setdefault("osd_extra", {})
                self.cl["osd_extra"] = {**self.cl["osd_extra"],
                                        "bluestore_debug_enforce_settings": "hdd" if want == "1" else "ssd"}
                log(f"{loop}: rotational not writable ({got}); using bluestore_debug_enforce_settings")

    def loop_info(self) -> list[dict[str, Any]]:
        out = []
        for loop in self.state["loops"]:
            q = Path("/sys/block") / Path(loop).name / "queue"
            info = {"device": loop}
            for k in ("rotational", "scheduler", "nr_requests", "logical_block_size", "write_cache"):
                with contextlib.suppress(OSError):
                    info[k] = (q / k).read_text().strip()
            with contextlib.suppress(OSError):
                info["dio"] = (Path("/sys/block") / Path(loop).name / "loop" / "dio").read_text().strip()
            out.append(info)
        return out

    # ---------------------------------------------------------------- up / down
    def up(self) -> float:
        t0 = time.time()
        for d in (self.data / "crash", self.run, self.logd):
            d.mkdir(parents=True, exist_ok=True)
        self.state["dirs"] = [str(self.data), str(self.run)]
        self._save()
        self.make_loops()
        fsid = str(uuid.uuid4())
        self.write_conf(fsid)
        kr = str(self.base / "keyring")
        subprocess.run(["ceph-authtool", "--create-keyring", kr, "--gen-key", "-n", "mon.", "--cap", "mon", "allow *"],
                       check=True, capture_output=True)
        subprocess.run(["ceph-authtool", kr, "--gen-key", "-n", "client.admin", "--cap", "mon", "allow *", "--cap",
                        "osd", "allow *", "--cap", "mgr", "allow *"], check=True, capture_output=True)
        c = self.cl
        monmap = str(self.run / "monmap")
        subprocess.run(["monmaptool", "--create", "--fsid", fsid, "--enable-all-features", "--set-min-mon-release",
                        "pacific", "--addv", "a",
                        f"[v2:127.0.0.1:{c['mon_v2_port']},v1:127.0.0.1:{c['mon_v1_port']}]", monmap],
                       check=True, capture_output=True)
        p = subprocess.run(["ceph-mon", "-c", str(self.conf), "--mkfs", "-i", "a", "--monmap", monmap, "--keyring", kr],
                           capture_output=True, text=True)
        if p.returncode:
            raise LabError(f"mon mkfs failed: {p.stderr[-300:]}")
        self.start_daemon("mon.a", "ceph-mon", "-i", "a")
        self.wait_for(60, "mon quorum", lambda: self.ceph("mon", "stat", timeout=20) is not None)
        (self.data / "mgr.x").mkdir(exist_ok=True)
        self.start_daemon("mgr.x", "ceph-mgr", "-i", "x")
        mk = []
        for _ in range(int(c["num_osds"])):
            u = str(uuid.uuid4())
            oid = self.ceph("osd", "new", u).strip()
            (self.data / f"osd.{oid}").mkdir(exist_ok=True)
            with open(self.logd / f"osd.{oid}.mkfs.out", "wb") as mo:
                mk.append(subprocess.Popen(["ceph-osd", "-c", str(self.conf), "-i", oid, "--mkfs", "--osd-uuid", u],
                                           stdout=mo, stderr=subprocess.STDOUT))
        for m in mk:
            if m.wait() != 0:
                raise LabError(f"osd mkfs failed, see {self.logd}/osd.*.mkfs.out")
        for i in range(int(c["num_osds"])):
            self.start_daemon(f"osd.{i}", "ceph-osd", "-i", str(i))
        self.wait_for(240, "OSDs up", self.osds_up)
        pool = c["pool"]
        self.ceph("osd", "pool", "create", pool, str(c["pg_num"]), str(c["pg_num"]), "replicated")
        self.ceph("osd", "pool", "set", pool, "size", str(c["pool_size"]))
        self.ceph("osd", "pool", "set", pool, "min_size", str(c["min_size"]))
        subprocess.run(["rbd", "-c", str(self.conf), "pool", "init", pool], check=True, env=self.env)
        subprocess.run(["rbd", "-c", str(self.conf), "create", "--size", str(parse_bytes(c["image_size"]) >> 20),
                        f"{pool}/{c['image']}"], check=True, env=self.env)
        self.wait_for(120, "PGs active+clean", self.pgs_clean)
        return time.time() - t0

    def osds_up(self) -> bool:
        d = self.ceph("osd", "stat", fmt_json=True, timeout=20)
        n = int(self.cl["num_osds"])
        return d.get("num_up_osds") == n and d.get("num_in_osds") == n

    def pgs_clean(self) -> bool:
        d = self.ceph("pg", "stat", fmt_json=True, timeout=20)
        d = d.get("pg_summary", d)
        n = d.get("num_pgs", 0)
        ok = sum(s["num"] for s in d.get("num_pg_by_state", []) if s["name"] == "active+clean")
        return n > 0 and ok == n

    def _osds_up_quiet(self) -> bool:
        try:
            return self.osds_up()
        except (LabError, subprocess.TimeoutExpired, json.JSONDecodeError, KeyError):
            return False

    def _wait_pidfile_free(self, name: str, timeout: float = 30) -> None:
        """Until nobody holds the daemon's pid-file lock (ceph's pidfile uses fcntl locks)."""
        pf = self.run / f"ceph-{name}.pid"
        end = time.time() + timeout
        while pf.exists() and time.time() < end:
            try:
                with open(pf, "a") as fh:
                    fcntl.lockf(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    fcntl.lockf(fh, fcntl.LOCK_UN)
                return
            except OSError:
                time.sleep(0.2)

    def restart_osds(self) -> float:
        """Cold caches: stop and start every OSD, wait until all PGs are active+clean."""
        t0 = time.time()
        osds = [n for n in self.state["pids"] if n.startswith("osd.")]
        self.stop_daemons(osds)
        for n in sorted(osds):
            self._wait_pidfile_free(n)
            self.start_daemon(n, "ceph-osd", "-i", n.split(".")[1])
        end = time.time() + 240
        while not self._osds_up_quiet():
            # an OSD that exited at start (e.g. its pid file or block device still locked by the old one while
            # it finished exiting) is started again
            for n in sorted(osds):
                if not _alive(self.state["pids"][n]):
                    log(f"{n} exited during restart: starting it again")
                    self._wait_pidfile_free(n)
                    self.start_daemon(n, "ceph-osd", "-i", n.split(".")[1])
            if time.time() > end:
                raise LabError("timeout (240 s) waiting for OSDs up after restart")
            time.sleep(2)
        self.wait_for(120, "PGs active+clean", self.pgs_clean)
        return time.time() - t0

    def teardown(self) -> None:
        """Stop our daemons, detach our loop devices, remove our files and data (logs stay)."""
        with contextlib.suppress(Exception):
            self.stop_daemons()
        for loop in list(self.state.get("loops", [])):
            p = subprocess.run(["losetup", "-d", loop], capture_output=True, text=True)
            if p.returncode and "No such device" not in p.stderr:
                log(f"losetup -d {loop}: {p.stderr.strip()}")
            self.state["loops"].remove(loop)
            self._save()
        for f in self.state.get("files", []):
            with contextlib.suppress(OSError):
                os.unlink(f)
        for d in self.state.get("dirs", []):
            shutil.rmtree(d, ignore_errors=True)
        for f in ("ceph.conf", "keyring"):
            with contextlib.suppress(OSError):
                (self.base / f).unlink()
        with contextlib.suppress(OSError):
            self.state_path.unlink()
        self.state = {"pids": {}, "loops": [], "files": []}

    # ---------------------------------------------------------------- measurement
    def daemon_cpu(self) -> dict[str, float]:
        out = {}
        for n, pid in self.state["pids"].items():
            with contextlib.suppress(OSError):
                out[n] = labparse.proc_cpu_seconds(Path(f"/proc/{pid}/stat").read_text(), CLK_TCK)
        return out

    def thread_cpu(self) -> dict[str, dict[str, float]]:
        """CPU seconds (utime + stime) per daemon and thread name (threads of one name summed), from
        /proc/<pid>/task/<tid>/stat: which threads carry the daemons' CPU (op workers, messenger, kv_sync,
        finisher, RocksDB, timers)."""
        out: dict[str, dict[str, float]] = {}
        for n, pid in self.state["pids"].items():
            per: dict[str, float] = {}
            with contextlib.suppress(OSError):
                for task in Path(f"/proc/{pid}/task").iterdir():
                    with contextlib.suppress(OSError):
                        txt = (task / "stat").read_text()
                        name = txt[txt.index("(") + 1:txt.rindex(")")]
                        per[name] = per.get(name, 0.0) + labparse.proc_cpu_seconds(txt, CLK_TCK)
            out[n] = per
        return out

    def idle_window(self, seconds: float) -> dict[str, Any]:
        """Daemon CPU over ``seconds`` without client IO (the background a run's CPU counters include)."""
        la0 = _loadavg()
        tb, cb = self.thread_cpu(), self.daemon_cpu()
        hb = labparse.host_cpu(Path("/proc/stat").read_text())
        t0 = time.time()
        time.sleep(seconds)
        wall = time.time() - t0
        ha = labparse.host_cpu(Path("/proc/stat").read_text())
        ta, ca = self.thread_cpu(), self.daemon_cpu()
        return {"wall_s": wall, "loadavg_before": la0, "loadavg_after": _loadavg(),
                "cpu_s": {n: ca[n] - cb[n] for n in ca if n in cb},
                "thread_cpu_s": labparse.thread_delta(tb, ta),
                "host_busy_share": 1 - (ha[1] - hb[1]) / (ha[0] - hb[0]) if ha[0] > hb[0] else None}

    def perf_dumps(self) -> dict[str, Any]:
        return {n: self.admin(n, "perf", "dump") for n in sorted(self.state["pids"]) if n.startswith("osd.")}

    def fio(self, out: Path, name: str, args: list[str],
            sample_window: tuple[float, float] | None = None) -> tuple[int, float, float]:
        """Run fio, returning (rc, wall seconds, fio user+sys CPU seconds). With ``sample_window`` = (a, b):
        per-thread CPU of fio's processes and of the daemons from a to a + b seconds after the start
        (``self.last_window``)."""
        c = self.cl
        cmd = ["fio", f"--name={name}", "--ioengine=rbd", "--clientname=admin", f"--pool={c['pool']}",
               f"--rbdname={c['image']}", "--direct=1", "--numjobs=1", "--lat_percentiles=1", *args,
               "--output-format=json+", f"--output={out}"]
        t0 = time.time()
        r0 = os.times()
        window = None
        if sample_window:  # per-thread CPU of fio (all its processes) and the daemons in the run's steady state
            a, b = sample_window
            with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env) as p:
                time.sleep(a)
                w0, f0, d0 = time.time(), tree_thread_cpu(p.pid), self.thread_cpu()
                time.sleep(b)
                w1, f1, d1 = time.time(), tree_thread_cpu(p.pid), self.thread_cpu()
                if p.poll() is None:
                    window = {"start_s": w0 - t0, "wall_s": w1 - w0, "fio_threads": labparse.thread_delta({"fio": f0}, {"fio": f1})["fio"],
                              "daemon_threads": labparse.thread_delta(d0, d1)}
                _, err = p.communicate()
                rc = p.returncode
        else:
            p = subprocess.run(cmd, capture_output=True, text=True, env=self.env)
            rc, err = p.returncode, p.stderr
        r1 = os.times()
        wall = time.time() - t0
        if rc:
            log(f"fio {name} failed: {err.strip()[-300:]}")
        self.last_window = window
        return rc, wall, (r1.children_user - r0.children_user) + (r1.children_system - r0.children_system)


def tree_thread_cpu(pid: int) -> dict[str, float]:
    """CPU seconds per thread name of a process and its descendants (fio forks its jobs)."""
    per: dict[str, float] = {}
    todo = [pid]
    while todo:
        p = todo.pop()
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{p}/task").iterdir():
                with contextlib.suppress(OSError):
                    txt = (task / "stat").read_text()
                    name = txt[txt.index("(") + 1:txt.rindex(")")]
                    per[name] = per.get(name, 0.0) + labparse.proc_cpu_seconds(txt, CLK_TCK)
                with contextlib.suppress(OSError):
                    todo += [int(c) for c in (task / "children").read_text().split()]
    return per


def _alive(pid: int) -> bool:
    """The process exists and is not a zombie (a zombie child of ours is reaped)."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2:].split()[0] != "Z"


def _loadavg() -> list[float]:
    return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]


def machine_info() -> dict[str, Any]:
    cpu = ""
    with contextlib.suppress(OSError):
        for ln in Path("/proc/cpuinfo").read_text().splitlines():
            if ln.startswith("model name"):
                cpu = ln.split(":", 1)[1].strip()
                break
    mem = ""
    with contextlib.suppress(OSError):
        mem = Path("/proc/meminfo").read_text().splitlines()[0]
    disk = {}
    for k in ("rotational", "write_cache", "scheduler"):
        with contextlib.suppress(OSError):
            disk[k] = Path(f"/sys/block/vda/queue/{k}").read_text().strip()
    fio_v = subprocess.run(["fio", "--version"], capture_output=True, text=True).stdout.strip()
    ceph_v = subprocess.run(["ceph", "--version"], capture_output=True, text=True).stdout.strip()
    return {"hostname_hash": hex(hash(platform.node()) & 0xFFFF), "kernel": platform.release(), "cpu": cpu,
            "nproc": os.cpu_count(), "mem": mem, "local_disk_vda": disk, "fio": fio_v, "ceph": ceph_v,
            "python": platform.python_version()}


# ============================================================================ campaign
def load_campaign(path: Path) -> dict[str, Any]:
    import yaml

    d = yaml.safe_load(path.read_text())
    if not isinstance(d, dict) or "sequences" not in d:
        raise LabError(f"{path}: a campaign needs 'sequences'")
    return d


def run_campaign(path: Path, out: Path | None, no_install: bool, only: set[str] | None = None,
                 repeats: int | None = None, rep0: int = 0) -> Path:
    camp = load_campaign(path)
    if not no_install:
        install()
    elif check_tools():
        raise LabError(f"missing: {', '.join(check_tools())}")
    fio_cfg = {**DEFAULT_FIO, **camp.get("fio", {})}
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = out or Path("/var/tmp/cephlab-runs") / f"{camp.get('name', path.stem)}-{stamp}"
    out.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, Any] = {
        "campaign": camp, "campaign_file": str(path), "started_utc": stamp, "machine": machine_info(),
        "loadavg_start": _loadavg(), "only": sorted(only) if only else None, "sequences": [],
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, _on_signal)
    base_cluster = camp.get("cluster", {})
    seq_no = 0
    try:
        for seq in camp["sequences"]:
            if only and seq["name"] not in only:
                continue
            for rep in range(rep0, rep0 + int(repeats if repeats is not None else seq.get("repeats", 1))):
                seq_no += 1
                cl = {**base_cluster, **seq.get("cluster", {})}
                try:
                    info = run_sequence(cl, seq, rep, seq_no, fio_cfg, out)
                except LabError as e:  # one failed sequence (timeout, busy port) does not end the campaign
                    log(f"sequence {seq.get('name')} #{rep} failed: {e}")
                    info = {"sequence": seq.get("name"), "repeat": rep, "seq_no": seq_no, "failed": str(e)}
                manifest["sequences"].append(info)
                manifest["loadavg_end"] = _loadavg()
                (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    except Interrupted as e:
        manifest["interrupted"] = str(e)
        (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
        log(f"interrupted ({e}); cleaned up")
        raise SystemExit(130) from None
    manifest["finished_utc"] = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    log(f"campaign done: {out}")
    return out


def run_sequence(cl: dict[str, Any], seq: dict[str, Any], rep: int, seq_no: int, fio_cfg: dict[str, Any],
                 out: Path) -> dict[str, Any]:
    """One sequence on one fresh cluster: QD outermost, then the listed rws (croit's order)."""
    name = seq["name"]
    lab = Lab(cl)
    info: dict[str, Any] = {"sequence": name, "repeat": rep, "seq_no": seq_no, "runs": []}
    lab.acquire()
    try:
        log(f"[{name} #{rep}] cluster up")
        info["up_s"] = lab.up()
        info["loops"] = lab.loop_info()
        info["cluster"] = lab.cl
        info["ceph_version"] = lab.ceph("version").strip()
        info["osd_config"] = {k: v for k, v in lab.admin("osd.0", "config", "show").items() if k.startswith(
            ("bluestore_", "osd_op_", "osd_memory", "bdev_", "osd_op_queue", "rocksdb_", "bluefs_", "osd_client"))}
        info["osd_rotational"] = [lab.ceph("osd", "metadata", str(i), fmt_json=True).get("bluestore_bdev_rotational")
                                  for i in range(int(lab.cl["num_osds"]))]
        log(f"[{name} #{rep}] up in {info['up_s']:.1f} s; fill {lab.cl['image_size']}")
        t0 = time.time()
        rc, wall, _ = lab.fio(out / f"s{seq_no:02d}-fill.json", "fill",
                              ["--rw=write", f"--bs={fio_cfg['fill_bs']}", f"--iodepth={fio_cfg['fill_iodepth']}"])
        if rc:
            raise LabError("fill failed")
        info["fill_s"] = time.time() - t0
        if seq.get("idle_s"):  # background CPU without client IO, after the fill settled
            time.sleep(float(seq.get("settle_s", 5)))
            info["idle_before"] = lab.idle_window(float(seq["idle_s"]))
            log(f"[{name} #{rep}] idle: OSD CPU {sum(v for k, v in info['idle_before']['cpu_s'].items() if k.startswith('osd.')) / info['idle_before']['wall_s']:.3f} cores")
        runs_dir = out / "runs"
        runs_dir.mkdir(exist_ok=True)
        for qd in seq["qds"]:
            for rw in seq["rws"]:
                if seq.get("fresh_cluster_per_run") and info["runs"]:
                    lab.teardown()
                    lab.up()
                    lab.fio(out / f"s{seq_no:02d}-fill-{rw}-{qd}.json", "fill",
                            ["--rw=write", f"--bs={fio_cfg['fill_bs']}", f"--iodepth={fio_cfg['fill_iodepth']}"])
                restart_s = lab.restart_osds() if seq.get("restart_osds_before_run") else None
                rid = f"s{seq_no:02d}-{name}-r{rep}-{rw}-qd{qd}"
                rdir = runs_dir / rid
                rdir.mkdir()
                args = [f"--rw={rw}", f"--bs={seq.get('bs', fio_cfg['bs'])}", f"--iodepth={qd}", "--time_based",
                        f"--runtime={seq.get('runtime', fio_cfg['runtime'])}"]
                if fio_cfg.get("ramp_time"):
                    args.append(f"--ramp_time={fio_cfg['ramp_time']}")
                if "randrepeat" in seq:
                    args.append(f"--randrepeat={int(seq['randrepeat'])}")
                la0 = _loadavg()
                pb = lab.perf_dumps()
                tb = lab.thread_cpu()
                cb = lab.daemon_cpu()
                hb = labparse.host_cpu(Path("/proc/stat").read_text())
                runtime = float(seq.get("runtime", fio_cfg["runtime"]))
                win = (3.0, runtime - 5.0) if seq.get("sample_window") and runtime > 8 else None
                rc, wall, fio_cpu = lab.fio(rdir / "fio.json", rid, args, win)
                ha = labparse.host_cpu(Path("/proc/stat").read_text())
                ca = lab.daemon_cpu()
                ta = lab.thread_cpu()
                pa = lab.perf_dumps()
                la1 = _loadavg()
                deltas = {n: labparse.perf_delta(pb[n], pa[n]) for n in pa}
                run = {
                    "id": rid, "sequence": name, "repeat": rep, "rw": rw, "qd": qd, "rc": rc, "wall_s": wall,
                    "fio_args": args, "restart_s": restart_s, "loadavg_before": la0, "loadavg_after": la1,
                    "cpu_s": {n: ca[n] - cb[n] for n in ca if n in cb}, "fio_cpu_s": fio_cpu,
                    "thread_cpu_s": labparse.thread_delta(tb, ta), "window": lab.last_window,
                    "host_busy_share": 1 - (ha[1] - hb[1]) / (ha[0] - hb[0]) if ha[0] > hb[0] else None,
                    "perf_delta": deltas,
                }
                (rdir / "run.json").write_text(json.dumps(run, indent=1))
                (rdir / "perf_before.json").write_text(json.dumps(pb))
                (rdir / "perf_after.json").write_text(json.dumps(pa))
                info["runs"].append(rid)
                row = labparse.fio_summary(labparse.fio_load(rdir / "fio.json")) if rc == 0 else {}
                log(f"  {rid}: {row.get('iops', 0):.0f} IOPS p50 {row.get('p50_ms', 0):.2f} ms "
                    f"p99 {row.get('p99_ms', 0):.2f} ms fast {row.get('fast_share')} load {la1[0]:.1f}")
        if seq.get("idle_s"):
            time.sleep(float(seq.get("settle_s", 5)))
            info["idle_after"] = lab.idle_window(float(seq["idle_s"]))
    finally:
        log(f"[{name} #{rep}] teardown")
        lab.teardown()
        lab.release()
    return info


# ============================================================================ derive
def derive(run_dirs: list[Path], data: Path) -> None:
    """Per-run table (runs.csv), per-point spread (points.csv), compact copies of fio JSON + perf deltas,
    from one or more run directories (e.g. a campaign and a later ``--only`` completion of it)."""
    import csv

    manifests = [json.loads((d / "manifest.json").read_text()) for d in run_dirs]
    rows = []
    for rdir in [r for d in run_dirs for r in sorted((d / "runs").iterdir())]:
        if not (rdir / "run.json").exists() or not (rdir / "fio.json").exists():
            continue
        run = json.loads((rdir / "run.json").read_text())
        if run.get("rc"):
            continue
        if (rdir / "perf_before.json").exists() and (rdir / "perf_after.json").exists():
            pb = json.loads((rdir / "perf_before.json").read_text())
            pa = json.loads((rdir / "perf_after.json").read_text())
            run["perf_delta"] = {n: labparse.perf_delta(pb[n], pa[n]) for n in pa if n in pb}
            run["perf_after_gauges"] = {n: labparse.perf_gauges(pa[n]) for n in pa}
        fio = labparse.fio_load(rdir / "fio.json")
        row = {"id": run["id"], "sequence": run["sequence"], "repeat": run["repeat"], **labparse.fio_summary(fio)}
        tot = labparse.sum_osds(list(run["perf_delta"].values()))
        row.update({k: v for k, v in labparse.mechanism_shares(tot).items()})
        for k in ("kv_commit_mean_ms", "kv_flush_mean_ms", "kv_sync_mean_ms", "op_queue_wait_mean_ms",
                  "op_r_mean_ms", "op_w_mean_ms", "subop_w_mean_ms", "throttle_deferred_wait_count",
                  "throttle_bytes_wait_count", "deferred_write_ops", "kv_commit_count", "txc", "op_r", "op_w",
                  "buffer_hit_bytes", "buffer_miss_bytes", "onode_misses"):
            row[k] = tot.get(k)
        g = list(run.get("perf_after_gauges", {}).values())
        if g:
            row["data_cache_bytes_mean"] = sum(x.get("data_cache_committed_bytes", 0) for x in g) / len(g)
            row["buffer_bytes_mean"] = sum(x.get("buffer_bytes", 0) for x in g) / len(g)
        secs = row["runtime_s"] or 1.0
        cpu = run["cpu_s"]
        row["cpu_osd_s_per_s"] = sum(v for k, v in cpu.items() if k.startswith("osd.")) / secs
        row["cpu_mon_mgr_s_per_s"] = sum(v for k, v in cpu.items() if not k.startswith("osd.")) / secs
        row["cpu_fio_s_per_s"] = run["fio_cpu_s"] / secs
        ios = max(1, row["ios"])
        row["cpu_osd_us_per_io"] = 1e6 * sum(v for k, v in cpu.items() if k.startswith("osd.")) / ios
        row["cpu_fio_us_per_io"] = 1e6 * run["fio_cpu_s"] / ios
        row["cpu_window_s"] = run.get("wall_s")  # the CPU counters' window (fio's wall time, start-up included)
        if run.get("thread_cpu_s"):  # per thread role (labparse.THREAD_ROLES), OSDs summed
            for role, v in sorted(labparse.thread_roles(run["thread_cpu_s"]).items()):
                row[f"cpu_osd_{role}_us_per_io"] = 1e6 * v / ios
        win = run.get("window")
        if win:  # steady-state window: shares of fio's CPU by thread (fio's job thread vs librbd's threads)
            ft = win["fio_threads"]
            tot_f = sum(ft.values()) or 1.0
            for role, v in sorted(labparse.fio_thread_roles(ft).items()):
                row[f"fio_{role}_share"] = v / tot_f
            row["window_fio_cores"] = tot_f / win["wall_s"]
            row["window_osd_cores"] = sum(sum(th.values()) for n, th in win["daemon_threads"].items()
                                          if n.startswith("osd.")) / win["wall_s"]
        row["host_busy_share"] = run["host_busy_share"]
        row["loadavg_1m_before"] = run["loadavg_before"][0]
        row["loadavg_1m_after"] = run["loadavg_after"][0]
        rows.append(row)
        # compact fio JSON (json+ bins of the measured direction only) for the committed data
        job = fio["jobs"][0]
        keep = {k: job[k] for k in ("jobname", "job options", "read", "write", "usr_cpu", "sys_cpu", "ctx",
                                    "latency_ns", "latency_us", "latency_ms") if k in job}
        for dirn in ("read", "write", "trim", "sync"):
            if dirn in keep and keep[dirn].get("total_ios", 0) == 0:
                keep[dirn] = {k: v for k, v in keep[dirn].items() if not isinstance(v, dict)}
        compact = {"fio version": fio.get("fio version"), "timestamp": fio.get("timestamp"),
                   "global options": fio.get("global options", {}), "jobs": [keep]}
        (data / "fio").mkdir(parents=True, exist_ok=True)
        (data / "fio" / f"{run['id']}.json").write_text(json.dumps(compact, separators=(",", ":")))
        (data / "perf").mkdir(parents=True, exist_ok=True)
        (data / "perf" / f"{run['id']}.json").write_text(json.dumps(
            {"perf_delta": run["perf_delta"], "perf_after_gauges": run.get("perf_after_gauges", {}), "cpu_s": run["cpu_s"], "fio_cpu_s": run["fio_cpu_s"],
             "thread_cpu_s": run.get("thread_cpu_s"), "wall_s": run.get("wall_s"), "window": run.get("window"),
             "loadavg_before": run["loadavg_before"], "loadavg_after": run["loadavg_after"],
             "host_busy_share": run["host_busy_share"], "restart_s": run["restart_s"]}, indent=0))
    data.mkdir(parents=True, exist_ok=True)
    cols = list(dict.fromkeys(k for r in rows for k in r))
    with open(data / "runs.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})
    groups: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["sequence"], r["rw"], r["qd"]), []).append(r)
    metrics = ["iops", "p50_ms", "p99_ms", "lat_mean_ms", "fast_share", "cache_hit_share", "deferred_share",
               "kv_commit_mean_ms", "op_queue_wait_mean_ms", "txc_per_kv_commit", "cpu_osd_us_per_io",
               "cpu_fio_us_per_io", "host_busy_share", "loadavg_1m_before"]
    with open(data / "points.csv", "w", newline="") as f:
        hdr = ["sequence", "rw", "qd", "n"]
        for m in metrics:
            hdr += [m, f"{m}_sd", f"{m}_range_rel"]
        w = csv.writer(f)
        w.writerow(hdr)
        for (s, rw, qd), rs in groups.items():
            line: list[Any] = [s, rw, qd, len(rs)]
            for m in metrics:
                sp = labparse.spread([r.get(m) for r in rs if r.get(m) is not None])
                line += [_fmt(sp["mean"]), _fmt(sp["sd"]), _fmt(sp["range_rel"])]
            w.writerow(line)
    # per sequence: a reference table in the simulator's metric names (mean over repeats), for experiments
    # (reference:) and calibrations (targets: csv)
    with open(data / "reference.csv", "w", newline="") as f:
        f.write("# Ceph lab: mean over fresh-cluster repeats per sequence (variant), rw and QD (lab.py derive; "
                "runs.csv has each run, points.csv the spread)\n")
        w = csv.writer(f)
        hdr = ["variant", "rw", "qd", "n"]
        for d in ("read", "write"):
            hdr += [f"{d}.iops", f"{d}.p50_ms", f"{d}.p99_ms", f"{d}.lat_mean_ms"]
        w.writerow(hdr)
        for seq in sorted({k[0] for k in groups}):
            for (s2, rw, qd), rs in sorted(groups.items(), key=lambda x: (x[0][2], x[0][1])):
                if s2 != seq:
                    continue
                d = "read" if "read" in rw else "write"
                line = [seq, rw, qd, len(rs)]
                for dd in ("read", "write"):
                    for m in ("iops", "p50_ms", "p99_ms", "lat_mean_ms"):
                        line.append(_fmt(labparse.spread([r[m] for r in rs])["mean"]) if dd == d else "")
                w.writerow(line)
    # idle windows (sequences with idle_s): the daemons' CPU without client IO, before and after the runs
    idle = []
    for d, manifest in zip(run_dirs, manifests, strict=True):
        for info in manifest.get("sequences", []):
            for when in ("idle_before", "idle_after"):
                w = info.get(when)
                if not w:
                    continue
                r = {"run_dir": d.name, "sequence": info["sequence"], "repeat": info["repeat"], "when": when,
                     "wall_s": w["wall_s"], "loadavg_1m_before": w["loadavg_before"][0],
                     "host_busy_share": w["host_busy_share"],
                     "cpu_osd_cores": sum(v for k, v in w["cpu_s"].items() if k.startswith("osd.")) / w["wall_s"],
                     "cpu_mon_mgr_cores": sum(v for k, v in w["cpu_s"].items() if not k.startswith("osd.")) / w["wall_s"]}
                for role, v in sorted(labparse.thread_roles(w["thread_cpu_s"]).items()):
                    r[f"cpu_osd_{role}_cores"] = v / w["wall_s"]
                idle.append(r)
    if idle:
        cols_i = list(dict.fromkeys(k for r in idle for k in r))
        with open(data / "idle.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=cols_i)
            w.writeheader()
            for r in idle:
                w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})
    parts = []
    for d, manifest in zip(run_dirs, manifests, strict=True):
        man = {k: manifest[k] for k in ("campaign_file", "campaign", "only", "started_utc", "finished_utc", "machine",
                                        "loadavg_start", "loadavg_end", "interrupted") if k in manifest}
        man["run_dir"] = d.name
        man["sequences"] = manifest["sequences"]
        parts.append(man)
    (data / "manifest.json").write_text(json.dumps({"invocations": parts}, indent=1))
    log(f"derived {len(rows)} runs, {len(groups)} points -> {data}")


def _fmt(v: Any) -> str:
    return "" if v is None else f"{v:.6g}"


# ============================================================================ probe
def probe(out: Path, base: Path, runtime: int = 10) -> None:
    """fio on one bare loop device like the OSDs' (sparse file on the local disk, direct IO): 4 KiB randread
    QD1 and 4 KiB writes each followed by a flush (fsync of the device = an fsync of the backing file), the two
    device operations of BlueStore's read and kv commit paths. One JSON per job in ``out``."""
    lab = Lab({"base": str(base), "num_osds": 1, "osd_size": "1GiB", "mon_v2_port": 13380, "mon_v1_port": 13381})
    lab.acquire()
    out.mkdir(parents=True, exist_ok=True)
    try:
        lab.make_loops()
        dev = lab.state["loops"][0]
        common = ["--filename=" + dev, "--direct=1", "--bs=4k", "--size=512M", "--time_based", f"--runtime={runtime}",
                  "--output-format=json+"]
        subprocess.run(["fio", "--name=fill", "--filename=" + dev, "--direct=1", "--bs=1M", "--size=512M",
                        "--rw=write", "--ioengine=libaio", "--iodepth=16"], check=True, capture_output=True)
        for name, args in (("loop-randread-qd1", ["--rw=randread", "--ioengine=psync"]),
                           ("loop-write-fsync-qd1", ["--rw=randwrite", "--ioengine=psync", "--fsync=1"])):
            la = _loadavg()
            subprocess.run(["fio", f"--name={name}", *common, *args, f"--output={out / (name + '.json')}"], check=True,
                           capture_output=True)
            d = labparse.fio_load(out / f"{name}.json")
            j = d["jobs"][0]
            d["lab_loadavg_before"] = la
            (out / f"{name}.json").write_text(json.dumps(d))
            r = labparse.fio_summary(d)
            sync = j.get("sync", {}).get("lat_ns", {})
            log(f"{name}: {r['iops']:.0f} IOPS, p50 {r['p50_ms']:.3f} ms; fsync mean "
                f"{sync.get('mean', 0) / 1e6:.3f} ms; load {la[0]:.1f}")
    finally:
        lab.teardown()
        lab.release()


# ============================================================================ CLI
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="lab.py", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run a campaign")
    r.add_argument("campaign", type=Path)
    r.add_argument("--out", type=Path)
    r.add_argument("--no-install", action="store_true")
    r.add_argument("--derive-to", type=Path, help="derive tables into this directory when done")
    r.add_argument("--only", help="comma-separated sequence names to run (default: all)")
    r.add_argument("--repeats", type=int, help="repeats of every sequence (default: the campaign's)")
    r.add_argument("--first-repeat", type=int, default=0, help="number of the first repeat (to continue a campaign)")
    d = sub.add_parser("derive", help="tables from a run directory")
    d.add_argument("run_dir", type=Path, nargs="+")
    d.add_argument("--data", type=Path, default=Path(__file__).resolve().parent / "data")
    dn = sub.add_parser("down", help="clean up a lab's leftovers from its state file")
    dn.add_argument("--base", type=Path, default=Path(DEFAULT_CLUSTER["base"]))
    sub.add_parser("check", help="report missing tools")
    pr = sub.add_parser("probe", help="fio on a bare loop device (read latency, write+flush latency)")
    pr.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "data" / "loop-probe")
    pr.add_argument("--base", type=Path, default=Path("/var/tmp/cephlab-probe-13380"))
    pr.add_argument("--runtime", type=int, default=10)
    a = ap.parse_args(argv)
    try:
        if a.cmd == "run":
            if not a.campaign.is_file():
                raise LabError(f"{a.campaign}: no such campaign file")
            if os.geteuid() != 0:
                raise LabError("needs root (loop devices, apt-get)")
            o = run_campaign(a.campaign, a.out, a.no_install, set(a.only.split(",")) if a.only else None,
                             a.repeats, a.first_repeat)
            if a.derive_to:
                derive([o], a.derive_to)
        elif a.cmd == "derive":
            derive(a.run_dir, a.data)
        elif a.cmd == "down":
            lab = Lab({"base": str(a.base)})
            lab.acquire()
            lab.teardown()
            lab.release()
        elif a.cmd == "probe":
            if os.geteuid() != 0:
                raise LabError("needs root (loop devices)")
            for sg in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                signal.signal(sg, _on_signal)
            probe(a.out, a.base, a.runtime)
        elif a.cmd == "check":
            m = check_tools()
            print("ready" if not m else "missing: " + ", ".join(m))
            return 0 if not m else 1
    except LabError as e:
        print(f"lab.py: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
