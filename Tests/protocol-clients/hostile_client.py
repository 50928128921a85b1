#!/usr/bin/env python3
# A client written from docs/PROTOCOL.md that tries to take as much of voipd as one uid can
# (docs/SECURITY.md). Prints one JSON line with what it got and why it stopped, then, with
# --hold, keeps everything open until it is killed.
#   hostile_client.py apps COUNT SOCKETS   hello as COUNT apps, each registering SOCKETS sockets
#   hostile_client.py connections COUNT    open COUNT connections, each asking for status once
import array, json, os, select, signal, socket, struct, sys

HELLO, REGISTER, STATUS, REPLY = 1, 2, 17, 128
path = os.environ["VOIPD_SOCKET"]

def send(conn, mtype, body, fds=()):
    data = json.dumps(body).encode()
    rights = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds).tobytes())] if fds else []
    conn.sendmsg([struct.pack("<IHBB", len(data), mtype, len(fds), 1) + data], rights)

def reply(conn, timeout=10):  # the next reply: (ok, error code or None)
    while True:
        if not select.select([conn], [], [], timeout)[0]:
            return False, "timeout"
        data, ancillary, _, _ = conn.recvmsg(65536, socket.CMSG_SPACE(253 * 4), socket.MSG_CMSG_CLOEXEC)
        if not data:
            return False, "closed"
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                for fd in array.array("i", payload[:len(payload) - len(payload) % 4]):
                    os.close(fd)
        length, mtype = struct.unpack_from("<IH", data)
        if mtype == REPLY:
            message = json.loads(data[8:8 + length])
            return message["ok"], None if message["ok"] else message["error"]["code"]

def connect():
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    conn.connect(path)
    return conn

def hoard_apps(count, sockets):
    kept, apps, held, refusal = [], 0, 0, None
    for i in range(count):
        conn = connect()
        kept.append(conn)
        send(conn, HELLO, {"id": 1, "name": "hoard-%d" % i})
        ok, refusal = reply(conn)
        if not ok:
            break
        apps += 1
        for j in range(sockets):
            mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            send(conn, REGISTER, {"id": 2 + j, "name": "s%d" % j}, [theirs.fileno()])
            ok, refusal = reply(conn)
            theirs.close()
            kept.append(mine)
            if not ok:
                break
            held += 1
        if refusal:
            break
    return kept, {"apps": apps, "sockets": held, "refusal": refusal}

def hoard_connections(count):
    kept = []
    for _ in range(count):
        try:
            kept.append(connect())
        except OSError as error:
            return kept, {"open": len(kept), "refused": {}, "error": error.strerror}
    # Each asks for its status: an accepted connection gets the reply, a refused one got a
    # reply to request 0 when voipd accepted it only to say why.
    refused, served = {}, 0
    for conn in kept:
        try:
            send(conn, STATUS, {"id": 1})
        except OSError:
            pass
        ok, code = reply(conn)
        if ok:
            served += 1
        else:
            refused[code] = refused.get(code, 0) + 1
    return kept, {"open": served, "refused": refused}

mode = sys.argv[1]
if mode == "apps":
    kept, result = hoard_apps(int(sys.argv[2]), int(sys.argv[3]))
else:
    kept, result = hoard_connections(int(sys.argv[2]))
print(json.dumps(result), flush=True)
if "--hold" in sys.argv:
    while True:
        signal.pause()
