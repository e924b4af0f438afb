"""A Spark standalone cluster on this machine, and clickrank's code packed for executors.

:class:`StandaloneCluster` starts one master and N workers as separate
processes with pyspark's own ``bin/spark-class`` (the launch script behind
Spark's ``sbin/start-master.sh`` / ``start-worker.sh``), each worker with its
own work and scratch folder, on the loopback interface. The application's
executors are then separate JVMs started by the workers, with their own
Python workers: clickrank's code is serialised to them, shuffle files cross
process boundaries, and a worker can be killed mid-job
(:meth:`StandaloneCluster.kill_worker`) to see Spark retry its tasks. The
tests and ``benchmarks/bench_distributed.py`` use it; it is also a way to try
``spark-submit`` on a laptop before a real cluster.

:func:`code_zip` packs the importable clickrank package into a zip for
``spark-submit --py-files`` (Spark's documented way to ship pure-Python code
to executors; the dependencies -- numpy, polars, pyarrow -- must already be
on the executors' Python, e.g. from an archived environment passed to
``--archives``, see docs/scale.md).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Self

from .._core._validation import InputError
from ._detect import require_spark
from ._session import spark_session

__all__ = ["StandaloneCluster", "code_zip", "spark_home"]


def spark_home() -> Path:
    """The Spark distribution inside the installed pyspark (``bin/spark-class`` and jars)."""
    require_spark()
    import pyspark

    home = Path(os.environ.get("SPARK_HOME") or Path(pyspark.__file__).parent)
    if not (home / "bin" / "spark-class").is_file():
        raise InputError(f"no bin/spark-class under SPARK_HOME={home}: is it a Spark distribution?")
    return home


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _log_reason(text: str) -> str:
    """The line of a daemon's log that says why it stopped: its first error, or that Spark
    printed its usage (an argument it refused), or else the last lines."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        if " ERROR " in ln or "Exception" in ln:
            return ln
    if any(ln.startswith("Usage:") for ln in lines):
        return "Spark printed its usage: it refused an argument (cores, memory, host or port)"
    return " | ".join(lines[-3:]) or "(empty)"


def code_zip(path: str | os.PathLike | None = None) -> Path:
    """Zip the importable ``clickrank`` package (Python files and bundled data) for
    ``spark-submit --py-files`` or ``SparkContext.addPyFile``.

    Parameters
    ----------
    path : path-like, optional
        Where to write the zip (replaced if it exists and is a zip clickrank
        wrote). Default: a new file in the temporary folder.

    Returns
    -------
    Path
        The zip, written atomically.
    """
    package = Path(__file__).resolve().parents[1]  # this clickrank package
    if path is None:
        fd, name = tempfile.mkstemp(prefix="clickrank-", suffix=".zip")
        os.close(fd)
        path = name
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for f in sorted(package.rglob("*")):
            if f.is_file() and "__pycache__" not in f.parts and f.suffix not in (".pyc", ".nbi"):
                z.write(f, Path("clickrank") / f.relative_to(package))
    os.replace(tmp, path)
    return path


class StandaloneCluster:
    """One Spark master and ``workers`` workers on this machine, as separate processes.

    Parameters
    ----------
    workers : int
        Number of worker processes.
    cores, memory : int, str
        What each worker offers to applications (``--cores``, ``--memory``).
    folder : path-like, optional
        Where the processes' logs and each worker's work and scratch folders
        go (a new temporary folder by default, removed by :meth:`stop`).
    host : str
        The interface to bind (loopback by default).
    daemon_memory : str
        Heap of the master and worker daemons themselves.
    timeout : float
        Seconds to wait for the master to be alive and the workers registered.

    Examples
    --------
    >>> with StandaloneCluster(workers=2) as cluster:  # doctest: +SKIP
    ...     spark = cluster.session()
    ...     spark.range(10).count()
    10
    """

    def __init__(
        self,
        workers: int = 2,
        *,
        cores: int = 1,
        memory: str = "1g",
        folder: str | os.PathLike | None = None,
        host: str = "127.0.0.1",
        daemon_memory: str = "256m",
        timeout: float = 90.0,
    ) -> None:
        if workers < 1 or cores < 1:
            raise InputError(f"workers and cores must be >= 1, got {workers} and {cores}")
        self.n_workers, self.cores, self.memory = workers, cores, memory
        self.host, self.daemon_memory, self.timeout = host, daemon_memory, timeout
        self._own_folder = folder is None
        self.folder = Path(folder) if folder is not None else None
        self.master: subprocess.Popen | None = None
        self.workers: list[subprocess.Popen | None] = []
        self.url = ""
        self.webui = ""

    # -- processes ---------------------------------------------------------------------

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_GATEWAY")}
        env.update(
            SPARK_HOME=str(spark_home()),
            SPARK_LOCAL_IP=self.host,
            SPARK_DAEMON_MEMORY=self.daemon_memory,
            SPARK_NO_DAEMONIZE="1",
        )
        return env

    def _launch(self, name: str, args: Sequence[str], env: dict[str, str]) -> subprocess.Popen:
        assert self.folder is not None
        log = open(self.folder / f"{name}.log", "wb")  # noqa: SIM115 - the process owns it
        # a session of its own: kill_worker ends the worker, its executors and their
        # Python workers at once, as when a machine fails
        proc = subprocess.Popen(
            [str(spark_home() / "bin" / "spark-class"), *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
        log.close()
        return proc

    def start(self) -> Self:
        """Start the master, then the workers; return when all workers are registered.

        Raises
        ------
        InputError
            If a process exits or the cluster is not up within ``timeout`` seconds
            (the last lines of its log are in the message).
        """
        if self.master is not None:
            return self
        if self.folder is None:
            self.folder = Path(tempfile.mkdtemp(prefix="clickrank-cluster-"))
        self.folder.mkdir(parents=True, exist_ok=True)
        env = self._env()
        port, ui = _free_port(self.host), _free_port(self.host)
        self.url, self.webui = f"spark://{self.host}:{port}", f"http://{self.host}:{ui}"
        master_args = ["org.apache.spark.deploy.master.Master", "--host", self.host]
        master_args += ["--port", str(port), "--webui-port", str(ui)]
        self.master = self._launch("master", master_args, env)
        try:
            self._wait(lambda s: s.get("status") == "ALIVE", "the master", "master")
            for i in range(self.n_workers):
                self.workers.append(self._start_worker(i, env))
            self._wait(
                lambda s: s.get("aliveworkers") == self.n_workers,
                f"{self.n_workers} workers",
                "worker-0",
            )
        except BaseException:
            self.stop()
            raise
        return self

    def _start_worker(self, i: int, env: dict[str, str]) -> subprocess.Popen:
        assert self.folder is not None
        work = self.folder / f"worker-{i}"
        (work / "local").mkdir(parents=True, exist_ok=True)
        args = ["org.apache.spark.deploy.worker.Worker", "--host", self.host]
        args += ["--cores", str(self.cores), "--memory", self.memory]
        args += ["--work-dir", str(work / "work"), "--webui-port", "0", self.url]
        # shuffle and block files of this worker's executors stay in its own folder
        return self._launch(f"worker-{i}", args, {**env, "SPARK_LOCAL_DIRS": str(work / "local")})

    def status(self) -> dict[str, Any]:
        """The master's JSON status (workers, applications), or ``{}`` if it does not answer."""
        try:
            with urllib.request.urlopen(f"{self.webui}/json/", timeout=2) as r:
                return json.loads(r.read())
        except (OSError, ValueError):
            return {}

    def _wait(self, ready, what: str, log: str) -> None:
        deadline = time.monotonic() + self.timeout
        why = f"not up within {self.timeout:.0f} s"
        while time.monotonic() < deadline:
            if ready(self.status()):
                return
            if any(p is not None and p.poll() is not None for p in [self.master, *self.workers]):
                why = "a process exited"
                break
            time.sleep(0.25)
        assert self.folder is not None
        text = (self.folder / f"{log}.log").read_text(errors="replace")
        raise InputError(
            f"the Spark standalone cluster did not start ({what}: {why}); {log}.log: "
            f"{_log_reason(text)}"
        )

    def session(self, **conf: str) -> Any:
        """A SparkSession of this process on the cluster (its executors on the workers).

        The executors run this interpreter (``PYSPARK_PYTHON``, unless set):
        the workers are on this machine. ``conf`` as
        :func:`clickrank.engine.spark_session`; by default two shuffle
        partitions per offered core and 512 MiB per executor.
        """
        if self.master is None:
            self.start()
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        cores = self.n_workers * self.cores
        defaults = {
            "spark_executor_memory": "512m",
            "spark_sql_shuffle_partitions": str(2 * cores),
            "spark_default_parallelism": str(2 * cores),
            "spark_ui_enabled": "false",
        }
        return spark_session(self.url, **{**defaults, **conf})

    def submit(
        self,
        script: str | os.PathLike,
        *args: str,
        py_files: Sequence[str | os.PathLike] = (),
        conf: dict[str, str] | None = None,
        wait: bool = True,
        timeout: float = 600.0,
    ) -> subprocess.CompletedProcess | subprocess.Popen:
        """Run ``spark-submit --master <this cluster> [--py-files ...] script args``.

        With ``wait`` (default), returns the completed process (text output)
        and raises InputError with the last lines of its output when it
        fails; otherwise returns the running :class:`subprocess.Popen` (text
        pipes), e.g. to kill a worker while it runs.
        """
        if self.master is None:
            self.start()
        cmd = [str(spark_home() / "bin" / "spark-submit"), "--master", self.url]
        if py_files:
            cmd += ["--py-files", ",".join(map(str, py_files))]
        for key, value in {"spark.executor.memory": "512m", **(conf or {})}.items():
            cmd += ["--conf", f"{key}={value}"]
        cmd += [str(script), *args]
        python = os.environ.get("PYSPARK_PYTHON", sys.executable)
        env = {**self._env(), "PYSPARK_PYTHON": python, "PYSPARK_DRIVER_PYTHON": python}
        pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
        if not wait:
            return subprocess.Popen(cmd, env=env, **pipes)
        res = subprocess.run(cmd, env=env, timeout=timeout, **pipes)
        if res.returncode != 0:
            tail = (res.stderr or res.stdout).strip().splitlines()[-5:]
            raise InputError(f"spark-submit exited with {res.returncode}: {' | '.join(tail)}")
        return res

    # -- failures and measurements -----------------------------------------------------

    def kill_worker(self, i: int) -> None:
        """SIGKILL worker ``i`` with its executors and their Python workers (a lost machine)."""
        proc = self.workers[i]
        if proc is None:
            return
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
        self.workers[i] = None

    def processes(self) -> list[dict[str, Any]]:
        """Every live process of the cluster: role (master, worker-i), kind (daemon,
        executor, python), pid, peak resident memory (``VmHWM``, bytes) and command.

        Executors and their Python workers are listed under the worker that
        started them (found by parent process); the application's driver is not
        here (it is the caller's process or spark-submit's).
        """
        roots = {p.pid: name for name, p in self._named() if p is not None}
        info = {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                status = (entry / "status").read_text()
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except (OSError, IndexError, ValueError):
                continue  # ended meanwhile
            hwm = next((ln.split()[1] for ln in status.splitlines() if ln.startswith("VmHWM")), "0")
            info[int(entry.name)] = (ppid, int(hwm) * 1024, cmd)
        out = []
        for pid, (_, peak, cmd) in info.items():
            node, role = pid, None
            for _ in range(16):  # up the tree to a daemon this object started
                if node in roots:
                    role = roots[node]
                    break
                node = info.get(node, (0,))[0]
            program = cmd.split(" ", 1)[0]
            if role is None or ("java" not in program and "python" not in program):
                continue  # not ours, or a launch script's shell
            kind = "executor" if "CoarseGrainedExecutorBackend" in cmd else "python"
            if "deploy.master.Master" in cmd or "deploy.worker.Worker" in cmd:
                kind = "daemon"
            out.append({"role": role, "kind": kind, "pid": pid, "peak_rss": peak,
                        "command": cmd[:200]})  # fmt: skip
        return sorted(out, key=lambda r: (r["role"], r["kind"], r["pid"]))

    def _named(self) -> list[tuple[str, subprocess.Popen | None]]:
        return [("master", self.master), *((f"worker-{i}", p) for i, p in enumerate(self.workers))]

    def stop(self) -> None:
        """Stop the workers and the master (SIGTERM, then SIGKILL after 10 s) and remove
        the temporary folder."""
        for _, proc in reversed(self._named()):
            if proc is None or proc.poll() is not None:
                continue
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            except ProcessLookupError:
                pass
        self.master, self.workers = None, []
        if self._own_folder and self.folder is not None:
            import shutil

            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = self.url or "not started"
        return f"StandaloneCluster(workers={self.n_workers}, cores={self.cores}, {state})"
