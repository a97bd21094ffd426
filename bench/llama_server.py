"""llama.cpp's own ``llama-server``, built from source for this machine's CPU (``bench/local_model.py
serve --native``).

Why build it: the prebuilt ``xllamacpp`` wheel is compiled for a portable x86-64 (its
``get_system_info()`` reports AVX2, no AVX-512), and on a CPU with AVX-512 VNNI a native build
reads prompts 1.3–1.8× as fast (measured in alternating runs: 69–85 against 48–61 prompt
tokens/s for the 1.5B model on 2 cores), and reading prompts is most of a formation's time. A native build is what llama.cpp's own
instructions give (``GGML_NATIVE`` is on by default).

The source is llama.cpp as vendored in PyPI's ``llama-cpp-python`` sdist (MIT), pinned by version
and sha256; only the ``llama-server`` target is built (~7 minutes on 2 cores, CMake and a C++
compiler needed), once, into the cache directory.

Both servers draft tokens by n-gram lookup in what the request has already seen (llama.cpp's
``ngram-simple`` speculative decoding, no draft model): an extraction answer copies names and
phrases from the transcript and repeats its own JSON keys, so ~64% of the drafted tokens are
accepted and generation runs ~20–25% faster. The model still chooses every token (a drafted
token is kept only where the model would have chosen it), though a batch is computed with other
kernels than a single token and rounding can tip a near tie: measured, the 12-message
extraction's answer was the same with and without drafting, the reflections' 157 tokens against 154.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

SOURCE_PACKAGE = "llama-cpp-python"
SOURCE_VERSION = "0.3.36"
# sha256 of llama_cpp_python-0.3.36.tar.gz as PyPI served it on 2026-11-26.
SOURCE_SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
VENDORED = "vendor/llama.cpp/"

# n-gram self-speculation: look up the last 3 tokens in the request's own tokens, draft the 8 that
# followed them. Short drafts, because on a CPU a verification batch is not free (a token read in
# a batch costs 1/4 to 1/8 of a generated one here, not ~1/100 as on a GPU).
NGRAM_N = 3
NGRAM_M = 8
SPECULATIVE_ARGS = [
    "--spec-type", "ngram-simple",
    "--spec-ngram-simple-size-n", str(NGRAM_N),
    "--spec-ngram-simple-size-m", str(NGRAM_M),
]  # fmt: skip


def sha256(path: Path) -> str:
    """The file's sha256, read in 4 MiB chunks (a GGUF is over a gigabyte)."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


def _source(cache: Path) -> Path:
    """The checked sdist, downloaded when missing."""
    downloads = cache / "sources"
    sdist = downloads / f"llama_cpp_python-{SOURCE_VERSION}.tar.gz"
    if not sdist.exists():
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
             "--quiet", "--disable-pip-version-check", "--dest", str(downloads),
             f"{SOURCE_PACKAGE}=={SOURCE_VERSION}"],
            check=True,
        )  # fmt: skip
    digest = sha256(sdist)
    if digest != SOURCE_SHA256:
        raise SystemExit(f"{sdist} has sha256 {digest}, expected {SOURCE_SHA256}: not building it")
    return sdist


def _extract_llama_cpp(sdist: Path, into: Path) -> Path:
    """Only the vendored llama.cpp tree, its paths made relative to it."""
    with tarfile.open(sdist) as tar:
        members = []
        for member in tar.getmembers():
            _, _, inner = member.name.partition("/")
            if inner.startswith(VENDORED) and inner != VENDORED:
                member.name = inner.removeprefix(VENDORED)
                members.append(member)
        tar.extractall(into, members=members, filter="data")
    return into


def build(cache: Path) -> Path:
    """The path of a native ``llama-server`` under ``cache``, built now when it is not there.
    Kept per source version: a new pin builds anew rather than serving the old binary."""
    binary = cache / f"llama-server-{SOURCE_VERSION}" / "llama-server"
    if binary.exists():
        return binary
    if not shutil.which("cmake"):
        raise SystemExit(
            "building llama-server needs CMake and a C++ compiler (apt-get install cmake g++)"
        )
    sdist = _source(cache)
    with tempfile.TemporaryDirectory(dir=cache, prefix=".llama-build-") as tmp:
        src = _extract_llama_cpp(sdist, Path(tmp) / "llama.cpp")
        build_dir = Path(tmp) / "build"
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        print(f"building llama-server from {sdist.name} (several minutes)…", file=sys.stderr)
        subprocess.run(
            ["cmake", "-S", str(src), "-B", str(build_dir), *generator,
             "-DCMAKE_BUILD_TYPE=Release",
             "-DGGML_NATIVE=ON",  # this CPU's instructions (AVX-512, VNNI where it has them)
             "-DBUILD_SHARED_LIBS=OFF",  # one self-contained binary to copy out
             "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF",
             "-DLLAMA_USE_PREBUILT_UI=OFF",  # would download the Web UI at build time
             "-DLLAMA_OPENSSL=OFF"],
            check=True,
        )  # fmt: skip
        subprocess.run(
            ["cmake", "--build", str(build_dir), "--target", "llama-server",
             "--parallel", str(os.cpu_count() or 2)],
            check=True,
        )  # fmt: skip
        binary.parent.mkdir(parents=True, exist_ok=True)
        built = build_dir / "bin" / "llama-server"
        # Copied under another name and renamed: an interrupted copy is never taken for a build.
        partial = binary.with_name(".llama-server.partial")
        shutil.copy2(built, partial)
        partial.replace(binary)
    print(f"ok: {binary}", file=sys.stderr)
    return binary


def command(
    binary: Path, gguf: Path, *, port: int, ctx: int, threads: int, alias: str, speculative: bool
) -> list[str]:
    """The llama-server command line with the settings ``bench/local_model.py serve`` gives
    xllamacpp: one slot (formations take turns; two slots would each read their transcript at
    half speed), the given context and threads."""
    return [
        str(binary), "--model", str(gguf), "--alias", alias,
        "--host", "127.0.0.1", "--port", str(port),
        "--ctx-size", str(ctx), "--parallel", "1",
        "--threads", str(threads), "--threads-batch", str(threads),
        *(SPECULATIVE_ARGS if speculative else []),
    ]  # fmt: skip
