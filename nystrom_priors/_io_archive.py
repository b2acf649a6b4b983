"""Reading ``.npz`` model archives as untrusted input.

``np.load`` trusts an archive: an ``.npy`` header claiming a shape of 10^12 elements makes it
allocate that much before it reads a byte, and a zip member may claim any uncompressed size.
This reader checks every size against what the file can hold *before* allocating:

* the archive holds a bounded number of members, each stored or deflated (no encryption, no
  other compression), whose compressed sizes fit in the file;
* a stored member's size equals its compressed size; a deflated member (``save`` never
  compresses) expands to at most ``_MAX_EXPANSION`` times its compressed size, or
  ``_SMALL_MEMBER`` bytes: model arrays compress far less, a zip bomb far more;
* an ``.npy`` header is at most ``_MAX_HEADER`` bytes, its dtype is a plain number or a string
  (never an object dtype, which needs pickle), and the bytes its shape claims equal the bytes
  the member holds after the header.

Only then is the data read, into a buffer of the validated size, to the member's end (so the
zip's CRC-32 is checked). Any failure is a ``ValueError`` naming the file and the member.
"""

from __future__ import annotations

import tokenize
import zipfile
import zlib
from typing import Any, BinaryIO

import numpy as np

__all__ = ["read_arrays"]

_MAX_MEMBERS = 1024
_MAX_HEADER = 10_000  # np.lib.format's own limit for untrusted headers
_MAX_EXPANSION = 32
_SMALL_MEMBER = 1 << 20
_MAX_NDIM = 8
# dtype kinds an entry may have: booleans, integers, floats, unicode strings (the marker,
# the metadata JSON, string labels) and bytes (bytes labels)
_KINDS = "biufUS"
# what a damaged archive raises inside zipfile / zlib / numpy's header parser
_ARCHIVE_ERRORS = (
    zipfile.BadZipFile,
    zlib.error,
    EOFError,
    OSError,
    ValueError,
    KeyError,
    IndexError,
    OverflowError,
    TypeError,
    UnicodeError,
    NotImplementedError,
    RuntimeError,  # zipfile: encrypted member without a password
    SyntaxError,
    tokenize.TokenError,  # numpy's fallback parser of a damaged header tokenizes it
    RecursionError,
    MemoryError,
)


class _Corrupt(Exception):
    """Internal: a model file that cannot be read (raised to callers as a ValueError)."""


class _Counting:
    """File-like wrapper that counts the bytes read (the ``.npy`` header's length)."""

    def __init__(self, fp: Any) -> None:
        self.fp = fp
        self.count = 0

    def read(self, n: int = -1) -> bytes:
        data = self.fp.read(n)
        self.count += len(data)
        return data


def _fail(path: str, member: str | None, problem: str) -> _Corrupt:
    where = f" (member {member!r})" if member else ""
    return _Corrupt(
        f"{path!r} is not a readable nystrom_priors model file{where}: {problem}. It is "
        "truncated or corrupted, or was not written by nystrom_priors.save."
    )


def _check_member(path: str, info: zipfile.ZipInfo, file_size: int) -> None:
    name = info.filename
    if info.flag_bits & 0x1:
        raise _fail(path, name, "the member is encrypted")
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise _fail(path, name, f"unsupported compression method {info.compress_type}")
    if info.compress_size > file_size or info.header_offset + info.compress_size > file_size:
        raise _fail(
            path,
            name,
            f"the member claims {info.compress_size} bytes, more than the file's {file_size}",
        )
    if info.compress_type == zipfile.ZIP_STORED and info.file_size != info.compress_size:
        raise _fail(
            path,
            name,
            f"a stored member whose size ({info.file_size} bytes) differs from its "
            f"stored size ({info.compress_size} bytes)",
        )
    if info.file_size > max(_SMALL_MEMBER, _MAX_EXPANSION * info.compress_size):
        raise _fail(
            path,
            name,
            f"the member claims to expand from {info.compress_size} to "
            f"{info.file_size} bytes, out of proportion (at most {_MAX_EXPANSION} times)",
        )


def _read_npy(path: str, zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> np.ndarray:
    fmt = np.lib.format
    name = info.filename
    with zf.open(info) as raw:
        fp = _Counting(raw)
        version = fmt.read_magic(fp)
        if version == (1, 0):
            shape, fortran, dtype = fmt.read_array_header_1_0(fp, max_header_size=_MAX_HEADER)
        elif version == (2, 0):
            shape, fortran, dtype = fmt.read_array_header_2_0(fp, max_header_size=_MAX_HEADER)
        else:
            raise _fail(path, name, f"unsupported .npy format version {version}")
        if dtype.hasobject:
            raise _fail(
                path,
                name,
                "it holds pickled (object) arrays, which nystrom_priors never "
                "writes and refuses to load",
            )
        if dtype.kind not in _KINDS or dtype.fields is not None or dtype.subdtype is not None:
            raise _fail(path, name, f"unsupported dtype {dtype}")
        if dtype.itemsize == 0 or len(shape) > _MAX_NDIM:
            raise _fail(path, name, f"unsupported array layout (dtype {dtype}, shape {shape})")
        count = 1
        for extent in shape:  # Python integers: no overflow on a forged shape
            count *= int(extent)
        claimed = count * dtype.itemsize
        holds = info.file_size - fp.count
        if claimed != holds:
            raise _fail(
                path,
                name,
                f"its header claims shape {shape} of {dtype} ({claimed} bytes) "
                f"but the member holds {holds} bytes of data",
            )
        buf = bytearray(claimed)  # validated against the member's size, bounded by the file
        view = memoryview(buf)
        got = 0
        while got < claimed:
            n = raw.readinto(view[got:])
            if not n:
                raise _fail(path, name, f"the data end after {got} of {claimed} bytes")
            got += n
        if raw.read(1):  # reading to the end also verifies the member's CRC-32
            raise _fail(path, name, "bytes beyond the array's data")
    arr = np.frombuffer(buf, dtype=dtype).reshape(shape, order="F" if fortran else "C")
    if not arr.dtype.isnative or not arr.flags.c_contiguous:
        arr = np.array(arr, dtype=arr.dtype.newbyteorder("="), order="C")
    return arr


def read_arrays(path: str, file: BinaryIO, file_size: int) -> dict[str, np.ndarray]:
    """Every ``name.npy`` member of the archive open as ``file`` (``file_size`` bytes, read
    from ``path``, the name the messages give) as ``{name: array}``.

    Raises
    ------
    ValueError
        Anything the module docstring lists, a damaged zip structure or a CRC mismatch; the
        message names the file and the member.
    """
    member = None
    try:
        with zipfile.ZipFile(file) as zf:
            infos = zf.infolist()
            if len(infos) > _MAX_MEMBERS:
                raise _fail(path, None, f"{len(infos)} members (at most {_MAX_MEMBERS})")
            if sum(i.compress_size for i in infos) > file_size:
                raise _fail(path, None, "the members claim more bytes than the file holds")
            out: dict[str, np.ndarray] = {}
            for info in infos:
                member = info.filename
                if not member.endswith(".npy") or info.is_dir():
                    raise _fail(path, member, "not an .npy array")
                key = member[: -len(".npy")]
                if key in out:
                    raise _fail(path, member, "a member name that occurs twice")
                _check_member(path, info, file_size)
                out[key] = _read_npy(path, zf, info)
            return out
    except _Corrupt as exc:
        raise ValueError(str(exc)) from None
    except _ARCHIVE_ERRORS as exc:
        raise ValueError(str(_fail(path, member, f"{type(exc).__name__}: {exc}"))) from None
