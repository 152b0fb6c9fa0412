"""The two header serializations: JSON (type 0) and the ROCKETMQ binary layout (type 1).

JSON headers come from fastjson (Java) or from ali-ons, which writes ext-field values as raw
JSON numbers and booleans.  Decoding normalises every ext value to the string Java would
have written ("true"/"false", decimal numbers), so everything above this module sees one
dialect.  Encoding always writes strings.
"""

from __future__ import annotations

import struct

import orjson

from longboat.protocol.codes import LanguageCode, SerializeType
from longboat.protocol.command import RemotingCommand
from longboat.protocol.errors import ProtocolError

_LANG_BY_NAME = {m.name: m for m in LanguageCode}
_LANG_BY_CODE = {m.value: m for m in LanguageCode}
_NAME_BY_LANG = {m: m.name for m in LanguageCode}
_INT32_MIN = -(2**31)
_INT32_MAX = 2**31 - 1


def _language(value: object) -> LanguageCode:
    if isinstance(value, str):
        return _LANG_BY_NAME.get(value, LanguageCode.OTHER)
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return LanguageCode(value)
        except ValueError:
            return LanguageCode.OTHER
    raise ProtocolError(f"bad language field: {value!r}")


def ext_value(value: object) -> str | None:
    """One ext-field value as Java would have written it; None drops the field."""
    if isinstance(value, str):
        return value
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    raise ProtocolError(f"ext field value of unsupported type: {type(value).__name__}")


def _int_field(header: dict[str, object], name: str) -> int:
    """A top-level header number: a Java int, sent as a JSON number (or a decimal string)."""
    value = header.get(name, 0)
    if type(value) is int and _INT32_MIN <= value <= _INT32_MAX:
        return value
    if value is None:
        return 0
    if isinstance(value, str) and value.isascii():
        try:
            value = int(value)
        except ValueError:
            pass
    if type(value) is not int:
        raise ProtocolError(f"header field {name!r} is not an integer: {value!r}")
    if not _INT32_MIN <= value <= _INT32_MAX:
        raise ProtocolError(f"header field {name!r} is out of the Java int range: {value}")
    return value


# ---------------------------------------------------------------------------------------
# JSON (serializeType 0)
# ---------------------------------------------------------------------------------------


def _java_strings(raw_ext: dict[str, object]) -> dict[str, str]:
    """The ext map with every value as Java's string; Java peers already send only strings."""
    for value in raw_ext.values():
        if type(value) is not str:
            break
    else:
        return raw_ext  # type: ignore[return-value]
    ext: dict[str, str] = {}
    for key, value in raw_ext.items():
        text = ext_value(value)
        if text is not None:
            ext[key] = text
    return ext


def decode_json_header(data: bytes | memoryview) -> RemotingCommand:
    try:
        header = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ProtocolError(f"header is not valid JSON: {exc}") from None
    if type(header) is not dict:
        raise ProtocolError("JSON header is not an object")
    if "code" not in header:
        raise ProtocolError("header has no code")
    raw_ext = header.get("extFields")
    if raw_ext is None:
        ext: dict[str, str] = {}
    elif type(raw_ext) is dict:
        ext = _java_strings(raw_ext)
    else:
        raise ProtocolError("extFields is not an object")
    remark = header.get("remark")
    if remark is not None and type(remark) is not str:
        raise ProtocolError("remark is not a string")
    code, opaque, flag = header["code"], header.get("opaque", 0), header.get("flag", 0)
    version, language = header.get("version", 0), header.get("language", "JAVA")
    # What every peer sends: Java ints as JSON numbers, the language by name.  Anything else
    # takes the checks that normalise it or refuse it.
    if not (
        type(code) is int
        and type(opaque) is int
        and type(flag) is int
        and type(version) is int
        and _INT32_MIN <= code <= _INT32_MAX
        and _INT32_MIN <= opaque <= _INT32_MAX
        and _INT32_MIN <= flag <= _INT32_MAX
        and _INT32_MIN <= version <= _INT32_MAX
    ):
        code, opaque = _int_field(header, "code"), _int_field(header, "opaque")
        flag, version = _int_field(header, "flag"), _int_field(header, "version")
    return RemotingCommand(
        code,
        opaque,
        flag,
        _LANG_BY_NAME.get(language, LanguageCode.OTHER)
        if type(language) is str
        else _language(language),
        version,
        remark,
        ext,
        serialize_type=SerializeType.JSON,
    )


def encode_json_header(cmd: RemotingCommand) -> bytes:
    # Keys in fastjson's (alphabetical) order; absent remark omitted as fastjson does.
    header: dict[str, object] = {"code": cmd.code}
    if cmd.ext_fields:
        header["extFields"] = cmd.ext_fields
    header["flag"] = cmd.flag
    header["language"] = _NAME_BY_LANG[cmd.language]
    header["opaque"] = cmd.opaque
    if cmd.remark is not None:
        header["remark"] = cmd.remark
    header["serializeTypeCurrentRPC"] = "JSON"
    header["version"] = cmd.version
    return orjson.dumps(header)


# ---------------------------------------------------------------------------------------
# ROCKETMQ binary (serializeType 1)
# ---------------------------------------------------------------------------------------

_FIXED = struct.Struct(">hBhii")  # code, language, version, opaque, flag
_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")


def decode_rocketmq_header(data: bytes | memoryview) -> RemotingCommand:
    buf = bytes(data)  # one small copy; slicing bytes is cheaper than slicing a view
    size = len(buf)
    if size < 21:
        raise ProtocolError(f"ROCKETMQ header too short: {size} bytes")
    code, language, version, opaque, flag = _FIXED.unpack_from(buf, 0)
    pos = _FIXED.size
    (remark_len,) = _I32.unpack_from(buf, pos)
    pos += 4
    if remark_len < 0 or pos + remark_len > size:
        raise ProtocolError("ROCKETMQ header remark length out of range")
    try:
        # Java 4.9.8 reads an empty string as null.
        remark = buf[pos : pos + remark_len].decode() if remark_len else None
        pos += remark_len
        if pos + 4 > size:
            raise ProtocolError("ROCKETMQ header truncated before ext fields")
        (ext_len,) = _I32.unpack_from(buf, pos)
        pos += 4
        if ext_len < 0 or pos + ext_len > size:
            raise ProtocolError("ROCKETMQ header ext length out of range")
        end = pos + ext_len
        ext: dict[str, str] = {}
        while pos < end:
            if pos + 2 > end:
                raise ProtocolError("ROCKETMQ ext field truncated")
            (klen,) = _I16.unpack_from(buf, pos)
            pos += 2
            if klen < 0 or pos + klen + 4 > end:
                raise ProtocolError("ROCKETMQ ext key length out of range")
            key = buf[pos : pos + klen].decode()
            pos += klen
            (vlen,) = _I32.unpack_from(buf, pos)
            pos += 4
            if vlen < 0 or pos + vlen > end:
                raise ProtocolError("ROCKETMQ ext value length out of range")
            ext[key] = buf[pos : pos + vlen].decode()
            pos += vlen
    except UnicodeDecodeError:
        raise ProtocolError("ROCKETMQ header text is not UTF-8") from None
    return RemotingCommand(
        code=code,
        opaque=opaque,
        flag=flag,
        language=_LANG_BY_CODE.get(language, LanguageCode.OTHER),
        version=version,
        remark=remark,
        ext_fields=ext,
        serialize_type=SerializeType.ROCKETMQ,
    )


def encode_rocketmq_header(cmd: RemotingCommand) -> bytes:
    parts = [_FIXED.pack(cmd.code, int(cmd.language), cmd.version, cmd.opaque, cmd.flag)]
    remark = cmd.remark.encode("utf-8") if cmd.remark else b""
    parts.append(_I32.pack(len(remark)))
    parts.append(remark)
    ext_parts: list[bytes] = []
    for key, value in cmd.ext_fields.items():
        if value is None:
            continue
        kb = key.encode("utf-8")
        vb = value.encode("utf-8")
        ext_parts += (_I16.pack(len(kb)), kb, _I32.pack(len(vb)), vb)
    ext = b"".join(ext_parts)
    parts.append(_I32.pack(len(ext)))
    parts.append(ext)
    return b"".join(parts)


def request_identity(serialize_type: int, data: bytes | memoryview) -> RemotingCommand | None:
    """From a header that failed to decode, a bare command with whatever identifies the request
    (code, opaque, flag), so it can still be answered; None when even those are unreadable."""
    if serialize_type == SerializeType.ROCKETMQ:
        if len(data) < _FIXED.size:
            return None
        code, _, _, opaque, flag = _FIXED.unpack_from(data, 0)
    elif serialize_type == SerializeType.JSON:
        try:
            header = orjson.loads(data)
        except orjson.JSONDecodeError:
            return None
        if type(header) is not dict:
            return None
        try:
            code, opaque = _int_field(header, "code"), _int_field(header, "opaque")
            flag = _int_field(header, "flag")
        except ProtocolError:
            return None
    else:
        return None
    return RemotingCommand(
        code=code, opaque=opaque, flag=flag, serialize_type=SerializeType(serialize_type)
    )


def decode_header(serialize_type: int, data: bytes | memoryview) -> RemotingCommand:
    if serialize_type == SerializeType.JSON:
        return decode_json_header(data)
    if serialize_type == SerializeType.ROCKETMQ:
        return decode_rocketmq_header(data)
    raise ProtocolError(f"unknown serialize type {serialize_type}")


def encode_header(cmd: RemotingCommand) -> bytes:
    if cmd.serialize_type == SerializeType.ROCKETMQ:
        return encode_rocketmq_header(cmd)
    return encode_json_header(cmd)
