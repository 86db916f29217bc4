"""The progress endpoint reads an oversized body past before its 413 (tfop/progress/server.py: discard)."""

import io

import pytest

from tfop.progress.server import DISCARD_CHUNK, discard


class CountingStream(io.BytesIO):
    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.reads: list[int] = []

    def read(self, size: int | None = -1) -> bytes:
        chunk = super().read(size)
        self.reads.append(len(chunk))
        return chunk


@pytest.mark.parametrize(("sent", "length", "left", "reads"), [
    (100, 100, 0, [100]),
    (DISCARD_CHUNK * 2 + 5, DISCARD_CHUNK * 2 + 5, 0, [DISCARD_CHUNK, DISCARD_CHUNK, 5]),
    (DISCARD_CHUNK + 10, 50, DISCARD_CHUNK - 40, [50]),  # the next request's bytes are not eaten
    (30, 100, 0, [30, 0]),  # a sender that stops early ends the read at EOF, no spin
])
def test_discard_reads_the_stated_length_a_chunk_at_a_time(sent: int, length: int, left: int, reads: list[int]) -> None:
    stream = CountingStream(b"x" * sent)
    discard(stream, length)
    assert stream.reads == reads
    assert len(stream.read()) == left
