"""The dev server's HTTP and metrics ports sit next to its gRPC port when free, and elsewhere when
another process holds them (a test's dev server once failed: "can't set metrics port … address
already in use")."""

from __future__ import annotations

import socket
from pathlib import Path

from cli.stack import dev_server_command


def _flag(cmd: list[str], name: str) -> int:
    return int(cmd[cmd.index(name) + 1])


def test_the_derived_ports_move_aside_when_taken(tmp_path: Path) -> None:
    with socket.socket() as grpc:
        grpc.bind(("127.0.0.1", 0))
        port = grpc.getsockname()[1]
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = holder.getsockname()[1]
        cmd = dev_server_command(tmp_path, host="127.0.0.1", port=taken - 11, ui_port=port)
        metrics = _flag(cmd, "--metrics-port")
        assert metrics != taken
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", metrics))  # free when it was chosen


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def test_free_derived_ports_stay_next_to_the_grpc_port(tmp_path: Path) -> None:
    base = next(p for p in range(42000, 43000) if _bindable(p + 10) and _bindable(p + 11))
    cmd = dev_server_command(tmp_path, host="127.0.0.1", port=base, ui_port=base + 1)
    assert (_flag(cmd, "--http-port"), _flag(cmd, "--metrics-port")) == (base + 10, base + 11)
