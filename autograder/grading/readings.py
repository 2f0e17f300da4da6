"""Every way this grader reads a piece of text when it looks for its own secrets in it: as is,
reversed, under any Caesar shift, and decoded from base64/base32/base85, hex, percent or backslash
escapes or a list of character codes (each possibly zlib/gzip/bz2-compressed), up to two layers deep.

Used by :mod:`autograder.grading.leaks`; nothing here knows what a secret is.

The text comes from learner code, so reading it must cost the grader little whatever it holds:
only its first :data:`SCAN_LIMIT` characters are read, before any decoding; every pattern below
matches in one pass (no nested or overlapping repetition, possessive where a run could be split two
ways); a decompression yields at most :data:`INFLATE_LIMIT` bytes (a zip bomb is a short text); and
one text has at most :data:`MAX_READINGS` readings.
"""
from __future__ import annotations

import base64
import binascii
import bz2
import re
import urllib.parse
import zlib

SCAN_LIMIT = 2048        # characters of one learner text that are read at all (a report shows far fewer)
INFLATE_LIMIT = 16384    # bytes one decompression may yield
MAX_READINGS = 256       # readings of one text, all layers together

# Each is a single character class repeated, or a fixed-width unit whose separator is a class of its
# own, matched possessively: no text can make them backtrack more than a few characters.
_B64 = re.compile(r"[A-Za-z0-9+/=_-]{16,}+")
_B32 = re.compile(r"[A-Z2-7=]{16,}+")
_B85 = re.compile(r"[0-9A-Za-z!#$%&()*+\-;<=>?@^_`{|}~]{20,}+")
_HEX = re.compile(r"(?:[0-9a-fA-F]{2}[\s:,.-]?+){8,}+")
_NUMS = re.compile(r"\d{2,7}+(?:[\s,;]++\d{2,7}+){7,}+")


def readings(text: str, depth: int = 2, shifts: bool = True) -> list[str]:
    """``text`` as is and as every decoding this module knows, up to ``depth`` layers deep; without
    ``shifts``, no Caesar shifts (for a caller that shifts what it looks for instead, which is cheaper).
    Only the first :data:`SCAN_LIMIT` characters of ``text`` are read."""
    text = text[:SCAN_LIMIT]
    seen: dict[str, None] = {text: None}
    frontier = [text]
    for _ in range(depth):
        found = []
        for t in frontier:
            for r in _one_layer(t):
                r = r[:SCAN_LIMIT]
                if r and r not in seen and len(seen) < MAX_READINGS:
                    seen[r] = None
                    found.append(r)
        frontier = found
    out = list(seen)
    out += [t[::-1] for t in out]
    if shifts:
        out += [_shift(t, k) for t in list(out) for k in range(1, 26)]
    return out


def all_shifts(text: str) -> list[str]:
    """``text`` under every Caesar shift, itself included."""
    return [_shift(text, k) for k in range(26)]


def _one_layer(text: str) -> list[str]:
    out = []
    for decode in (_from_base64, _from_base32, _from_base85, _from_hex, _from_codes):
        out += [_text(b) for b in decode(text)]
    for f in (urllib.parse.unquote, _unescape):
        try:
            t = f(text)
        except Exception:  # noqa: BLE001 - not that encoding
            continue
        if t != text:
            out.append(t)
    return out


def _text(raw: bytes) -> str:
    raw = raw[:SCAN_LIMIT * 4]
    for unpack in (_inflate(zlib.MAX_WBITS), _inflate(zlib.MAX_WBITS | 16), _unbzip):
        try:
            raw = unpack(raw)
            break
        except Exception:  # noqa: BLE001 - not compressed that way
            pass
    return raw.decode("utf-8", "ignore") if _mostly_text(raw) else raw.decode("latin-1")


def _inflate(wbits: int):
    """zlib (or, with wbits | 16, gzip) decompression that stops after :data:`INFLATE_LIMIT` bytes."""
    def unpack(raw: bytes) -> bytes:
        d = zlib.decompressobj(wbits)
        out = d.decompress(raw, INFLATE_LIMIT)
        if not out and not d.eof:
            raise ValueError("not compressed")
        return out
    return unpack


def _unbzip(raw: bytes) -> bytes:
    """bz2 decompression that stops after :data:`INFLATE_LIMIT` bytes."""
    return bz2.BZ2Decompressor().decompress(raw, INFLATE_LIMIT)


def _mostly_text(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def _from_base64(text: str) -> list[bytes]:
    out = []
    for run in _B64.findall(text):
        for start in range(4):
            chunk = run[start:]
            chunk = chunk.rstrip("=")
            chunk += "=" * (-len(chunk) % 4)
            for alt in (None, b"-_"):
                try:
                    out.append(base64.b64decode(chunk, altchars=alt))
                except (binascii.Error, ValueError):
                    pass
    return out


def _from_base32(text: str) -> list[bytes]:
    out = []
    for run in _B32.findall(text.upper()):
        chunk = run.rstrip("=")
        for start in range(8):
            piece = chunk[start:]
            try:
                out.append(base64.b32decode(piece + "=" * (-len(piece) % 8)))
            except (binascii.Error, ValueError):
                pass
    return out


def _from_base85(text: str) -> list[bytes]:
    out = []
    for run in _B85.findall(text):
        for f in (base64.b85decode, base64.a85decode):
            try:
                out.append(f(run))
            except (ValueError, binascii.Error):
                pass
    return out


def _from_hex(text: str) -> list[bytes]:
    out = []
    for run in _HEX.findall(text):
        digits = re.sub(r"[^0-9a-fA-F]", "", run)
        for start in (0, 1):
            piece = digits[start:]
            piece = piece[: len(piece) // 2 * 2]
            try:
                out.append(bytes.fromhex(piece))
            except ValueError:
                pass
    return out


def _from_codes(text: str) -> list[bytes]:
    """A list of character codes (``[105, 109, 112, ...]``): as bytes, and as Unicode code points."""
    out = []
    for run in _NUMS.findall(text):
        nums = [int(n) for n in re.findall(r"\d+", run)]
        if all(n < 0x110000 for n in nums):
            out.append("".join(chr(n) for n in nums).encode("utf-8", "ignore"))
    return out


_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-7]{1,3}|[nrt\\'\"])")
_SIMPLE = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", "'": "'", '"': '"'}


def _unescape(text: str) -> str:
    """Backslash escapes (``\\x41``, ``\\u0041``, ``\\101``, ``\\n``) as the characters they stand for."""
    def one(m: re.Match) -> str:
        code = m.group(1)
        if code in _SIMPLE:
            return _SIMPLE[code]
        value = int(code[1:], 16) if code[0] in "xuU" else int(code, 8)
        return chr(value) if value < 0x110000 else m.group(0)

    return _ESCAPE.sub(one, text) if "\\" in text else text


_LOWER, _UPPER = "abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_SHIFTS = [str.maketrans(_LOWER + _UPPER, _LOWER[k:] + _LOWER[:k] + _UPPER[k:] + _UPPER[:k]) for k in range(26)]


def _shift(text: str, k: int) -> str:
    """``text`` with every ASCII letter moved ``k`` places on (a Caesar shift); a table, since every
    failing check's outcome is read this way 25 times."""
    return text.translate(_SHIFTS[k % 26])
