"""bench/llama_server.py: what it builds from and how it starts the server (the build itself takes
minutes and a compiler: it runs by hand, `bench/local_model.py serve --native`)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from bench import llama_server


def _sdist(path: Path, files: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_only_the_vendored_llama_cpp_is_extracted_with_its_own_paths(tmp_path: Path) -> None:
    sdist = _sdist(
        tmp_path / "src.tar.gz",
        {
            "llama_cpp_python-0.3.36/llama_cpp/llama.py": b"python binding",
            "llama_cpp_python-0.3.36/vendor/llama.cpp/CMakeLists.txt": b"project(llama.cpp)",
            "llama_cpp_python-0.3.36/vendor/llama.cpp/tools/server/server.cpp": b"int main()",
        },
    )
    root = llama_server._extract_llama_cpp(sdist, tmp_path / "llama.cpp")
    found = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    assert found == ["CMakeLists.txt", "tools/server/server.cpp"]


def test_a_source_with_another_digest_is_not_built(tmp_path: Path) -> None:
    sources = tmp_path / "sources"
    sources.mkdir()
    (sources / f"llama_cpp_python-{llama_server.SOURCE_VERSION}.tar.gz").write_bytes(b"tampered")
    with pytest.raises(SystemExit, match="expected"):
        llama_server._source(tmp_path)


def test_the_command_serves_one_slot_with_ngram_drafting_unless_turned_off(tmp_path: Path) -> None:
    def command(speculative: bool) -> list[str]:
        return llama_server.command(
            tmp_path / "llama-server", tmp_path / "m.gguf",
            port=18000, ctx=8192, threads=2, alias="m", speculative=speculative,
        )  # fmt: skip

    on, off = command(True), command(False)
    assert on[on.index("--parallel") + 1] == "1"
    assert on[on.index("--spec-type") + 1] == "ngram-simple"
    assert "--spec-type" not in off
    assert on[: len(off)] == off
