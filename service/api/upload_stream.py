"""Reading an upload's JSON body while it arrives: the top-level keys one by one and the `files` array one
file object at a time, so that service/store/ingest.UploadWriter can store each file and drop it before the
next is read.  A worker then holds about one file's JSON text plus its parse, never the whole body.

Plain Python (json.JSONDecoder.raw_decode on a sliding buffer fed from the request stream).  A single value
(one file object) larger than `max_value_bytes` is refused (ValueTooLarge): that bounds the buffer too.
"""
from __future__ import annotations

import codecs
import json
from typing import IO, Any, Iterator

_WS = " \t\n\r"
CHUNK = 1 << 16


class BodyError(ValueError):
    """Not a well-formed JSON object (400)."""


class ValueTooLarge(ValueError):
    """One JSON value larger than the per-value limit (413)."""


INT_DIGITS_MAX = 20     # an integer of the body: counts and sizes fit in 20 digits, int() of 4,300 raises


def _int(text: str) -> int:
    if len(text) - text.startswith("-") > INT_DIGITS_MAX:
        raise BodyError(f"a JSON integer of {len(text)} digits; integers here have at most {INT_DIGITS_MAX}")
    return int(text)


class JsonStream:
    def __init__(self, stream: IO[bytes], max_value_bytes: int):
        self.stream, self.max_value = stream, max_value_bytes
        self.decoder = json.JSONDecoder(parse_int=_int)
        self.utf8 = codecs.getincrementaldecoder("utf-8")()
        self.buf, self.pos, self.eof = "", 0, False

    def _more(self, at_least: int = CHUNK) -> bool:
        if self.eof:
            return False
        data = self.stream.read(max(CHUNK, at_least))
        if self.pos:
            self.buf, self.pos = self.buf[self.pos:], 0
        try:
            if not data:
                self.eof = True
                self.buf += self.utf8.decode(b"", final=True)
                return False
            self.buf += self.utf8.decode(data)
        except UnicodeDecodeError as exc:
            raise BodyError(f"the request body is not UTF-8: {exc.reason}") from None
        return True

    def _skip_ws(self) -> str:
        """The next non-blank character ('' at the end of the body)."""
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in _WS:
                self.pos += 1
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self._more():
                return ""

    def _expect(self, chars: str) -> str:
        c = self._skip_ws()
        if c == "" or c not in chars:
            raise BodyError(f"the request body is not valid JSON: expected {' or '.join(map(repr, chars))} "
                            f"at character {self.pos}")
        self.pos += 1
        return c

    def value(self) -> Any:
        """The next complete JSON value (reads until it is complete)."""
        self._skip_ws()
        while True:
            try:
                v, end = self.decoder.raw_decode(self.buf, self.pos)
                if end < len(self.buf) or self.eof or not isinstance(v, (int, float)):
                    if end - self.pos > self.max_value:
                        raise ValueTooLarge(f"one value of the body is larger than {self.max_value} bytes")
                    self.pos = end
                    return v
            except json.JSONDecodeError as exc:
                if self.eof:
                    raise BodyError(f"the request body is not valid JSON: {exc.msg}") from None
            except RecursionError:
                raise BodyError("the request body nests JSON too deeply") from None
            except (BodyError, ValueTooLarge):
                raise
            except ValueError as exc:     # what the decoder's number conversion may raise
                raise BodyError(f"the request body is not valid JSON: {exc}") from None
            held = len(self.buf) - self.pos
            if held > self.max_value:
                raise ValueTooLarge(f"one value of the body is larger than {self.max_value} bytes")
            self._more(held)   # doubling what is held: each retry costs what the last read brought

    def object_items(self) -> Iterator[tuple[str, Any]]:
        """(key, value) of the top-level object; the value of `files` is an iterator over its items, which
        the caller consumes before asking for the next key."""
        if self._skip_ws() != "{":
            raise BodyError("the request body must be a JSON object")
        self.pos += 1
        if self._skip_ws() == "}":
            self.pos += 1
            return self._end()
        while True:
            key = self.value()
            if not isinstance(key, str):
                raise BodyError("the request body is not valid JSON: object keys are strings")
            self._expect(":")
            if key == "files" and self._skip_ws() == "[":
                yield key, self._array()
            else:
                yield key, self.value()
            if self._expect(",}") == "}":
                break
        self._end()

    def _array(self) -> Iterator[Any]:
        self._expect("[")
        if self._skip_ws() == "]":
            self.pos += 1
            return
        while True:
            yield self.value()
            if self._expect(",]") == "]":
                return

    def _end(self) -> None:
        if self._skip_ws() != "":
            raise BodyError("the request body is not valid JSON: data after the object")
