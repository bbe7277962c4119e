"""A TCP relay between a client and mayfly that keeps every command the client sends, decoded.

The driver scenarios connect through it so that run.py can check what each driver puts on the
wire (the BSON type of a TTL index's `expireAfterSeconds`, the fields of `create`, whether the
handshake is OP_QUERY or OP_MSG) rather than what the server made of it. Bytes are relayed
unchanged in both directions; only the client's messages are parsed, by their header:
OP_MSG (2013: the body section, with each document sequence added to it under its identifier)
and OP_QUERY (2004: the query document). Other opcodes are recorded by opcode alone
(OP_COMPRESSED included: the scenarios do not ask for compression).
"""
import socket
import struct
import threading

import bson
from bson.codec_options import CodecOptions

OP_QUERY = 2004
OP_MSG = 2013
# Int64 stays Int64, so a command's integer types can be told apart.
CODEC = CodecOptions()


class Recorder:
    def __init__(self, upstream_port):
        self.upstream = ("127.0.0.1", upstream_port)
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.messages = []  # (opcode, command document or None)
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self):
        self.listener.close()

    def commands(self, name):
        """Every command document the clients sent whose first field is `name`."""
        with self.lock:
            return [doc for _, doc in self.messages if doc and next(iter(doc), None) == name]

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            for s in (client, server):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._requests, args=(client, server), daemon=True).start()
            threading.Thread(target=self._replies, args=(server, client), daemon=True).start()

    def _requests(self, client, server):
        try:
            while True:
                header = _read_exactly(client, 16)
                if header is None:
                    break
                length, _, _, opcode = struct.unpack("<iiii", header)
                body = _read_exactly(client, length - 16)
                if body is None:
                    break
                with self.lock:
                    self.messages.append((opcode, _command(opcode, body)))
                server.sendall(header + body)
        except OSError:
            pass
        finally:
            _close(client, server)

    @staticmethod
    def _replies(server, client):
        try:
            while True:
                data = server.recv(65536)
                if not data:
                    break
                client.sendall(data)
        except OSError:
            pass
        finally:
            _close(client, server)


def _read_exactly(sock, n):
    chunks = []
    while n > 0:
        chunk = sock.recv(min(n, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _close(*sockets):
    for s in sockets:
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        s.close()


def _command(opcode, body):
    if opcode == OP_QUERY:
        ns_end = body.index(b"\0", 4)
        start = ns_end + 1 + 8
        size = struct.unpack_from("<i", body, start)[0]
        return bson.decode(body[start:start + size], CODEC)
    if opcode != OP_MSG:
        return None
    flags = struct.unpack_from("<I", body)[0]
    end = len(body) - (4 if flags & 1 else 0)
    pos, command, sequences = 4, None, {}
    while pos < end:
        kind = body[pos]
        pos += 1
        size = struct.unpack_from("<i", body, pos)[0]
        if kind == 0:
            command = bson.decode(body[pos:pos + size], CODEC)
        else:
            name_end = body.index(b"\0", pos + 4)
            name = body[pos + 4:name_end].decode()
            sequences[name] = bson.decode_all(body[name_end + 1:pos + size], CODEC)
        pos += size
    if command is not None:
        command.update(sequences)
    return command


def type_name(value):
    """The BSON type of a decoded value, by mongod's `$type` names."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, bson.int64.Int64):
        return "long"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, bson.decimal128.Decimal128):
        return "decimal"
    return type(value).__name__
