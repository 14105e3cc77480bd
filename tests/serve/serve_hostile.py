"""serve_hostile.py - hostile clients against a running `savedmodel serve` (tests/cli/serve_hostile.sh).

usage: serve_hostile.py PORT PHASE [ARGS]
  strict MODEL                  trailing JSON, NULs (URL, %00, signature name), ambiguous
                                Content-Length, a body past the decoding limit: each a 400
  evict MODEL PER_CLIENT        with this client at its cap, a new connection closes its one
                                kept-alive idle connection, not the older silent ones
  flood MODEL IDLE SLOW         IDLE silent connections and SLOW slowloris clients (a header
                                byte a second) open at once: a status request still answers;
                                the slowloris connections are closed (header deadline)
  reload MODEL BASE FIXTURE N   copies FIXTURE into BASE/2 in two steps (saved_model.pb, then
                                variables/ 2.5 s later) while predicts run (from before the
                                copy until version 2 serves, N at least): none may fail, and
                                version 2 is served once complete
Loops are bounded; timeouts are generous (they only bound a hang). Exit 0 when every check passes."""
import json
import os
import resource
import shutil
import socket
import sys
import threading
import time
import urllib.error
import urllib.request

PORT = int(sys.argv[1])
BASE = 'http://127.0.0.1:%d' % PORT
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print('FAIL:', what)


def raw(data, timeout=10):
    """Sends bytes on a fresh connection; returns (status, body) of the answer, or (0, why)."""
    s = socket.create_connection(('127.0.0.1', PORT), timeout=timeout)
    try:
        s.sendall(data)
        out = b''
        while True:
            d = s.recv(65536)
            if not d:
                break
            out += d
    except OSError as e:
        return 0, str(e)
    finally:
        s.close()
    head, _, body = out.partition(b'\r\n\r\n')
    try:
        return int(head.split(b' ')[1]), body.decode('utf-8', 'replace')
    except (IndexError, ValueError):
        return 0, out[:200].decode('utf-8', 'replace')


def post(path, body, extra=b''):
    return raw(b'POST %s HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Length: %d\r\n%s\r\n' %
               (path, len(body), extra) + body)


def expect(what, got, status, needle):
    code, text = got
    check(code == status and needle in text, '%s: got %d %r, wanted %d with %r' % (what, code, text[:300], status, needle))


def strict(model):
    m = model.encode()
    pred = b'/v1/models/%s:predict' % m
    expect('sanity', post(pred, b'{"instances":[1.0]}'), 200, 'predictions')
    expect('trailing data', post(pred, b'{"instances":[1.0]} xxx'), 400,
           'The document root must not be followed by other values. at offset: 20')
    expect('trailing NUL', post(pred, b'{"instances":[1.0]}\x00'), 400, 'must not be followed')
    expect('NUL in signature name', post(pred, b'{"signature_name":"serving_default\\u0000x","instances":[1.0]}'),
           400, 'NUL byte')
    expect('%00 in model name', raw(b'GET /v1/models/%s%%00zz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n' % m),
           400, 'model name has a NUL byte')
    expect('%00 in a label', raw(b'GET /v1/models/%s/labels/a%%00b HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n'
                                 % m), 400, 'version label has a NUL byte')
    expect('raw NUL in URL', raw(b'GET /v1/models/%s\x00zz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n' % m),
           400, 'URL has a NUL byte')
    expect('query string still fine', raw(b'GET /v1/models/%s?a=b HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n'
                                          % m), 200, 'AVAILABLE')
    body = b'{"instances":[1.0]}'
    expect('two Content-Lengths', post(pred, body, b'Content-Length: 5\r\n'), 400,
           'Content-Length headers with different values')
    expect('Content-Length and chunked', post(pred, body, b'Transfer-Encoding: chunked\r\n'), 400,
           'both Content-Length and Transfer-Encoding')
    expect('long model name', raw(b'GET /v1/models/%s HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n' % (b'a' * 300)),
           400, 'longer than 255 bytes')
    depth = 3000000  # 6 MB of nesting needs 108 MB of DOM: over 12 x 6 MB + 32 MiB
    deep = b'{"instances":[1.0],"x":' + b'[' * depth + b']' * depth + b'}'
    expect('decoding limit', post(pred, deep), 400, 'over the limit of')
    expect('still serving', post(pred, body), 200, 'predictions')


def raise_fd_limit(need):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = need if hard == resource.RLIM_INFINITY else min(need, hard)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def open_conn():
    s = socket.socket()
    s.settimeout(10)
    s.connect(('127.0.0.1', PORT))
    s.setblocking(False)
    return s


def status_ok(model):
    t0 = time.monotonic()
    try:
        with urllib.request.urlopen(BASE + '/v1/models/' + model, timeout=30) as r:
            ok = r.status == 200 and 'AVAILABLE' in r.read().decode()
    except (OSError, urllib.error.URLError) as e:
        print('status request failed:', e)
        ok = False
    return ok, time.monotonic() - t0


def metric(name):
    with urllib.request.urlopen(BASE + '/monitoring/prometheus/metrics', timeout=30) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + ' '):
                return int(line.split()[-1])
    return -1


def evict(model, per_client):
    """Full for this client: a new connection closes the kept-alive idle one, not older fresh ones."""
    before = metric('savedmodel_http_connections_closed_total{reason="evicted"}')
    keep = socket.create_connection(('127.0.0.1', PORT), timeout=10)
    keep.sendall(b'GET /v1/models/%s HTTP/1.1\r\nHost: t\r\n\r\n' % model.encode())
    got = b''
    while b'AVAILABLE' not in got:  # its answer is in: it is now kept alive, idle
        d = keep.recv(65536)
        check(d != b'', 'kept-alive connection closed early')
        if not d:
            return
        got += d
    fresh = [open_conn() for _ in range(per_client - 1)]
    time.sleep(0.2)  # the server has them all listed
    ok, _ = status_ok(model)  # one more: room is made by closing `keep`
    check(ok, 'status request with the client at its cap')
    keep.settimeout(10)
    try:
        closed = keep.recv(1) == b''
    except OSError:
        closed = True
    check(closed, 'the idle kept-alive connection was not the one closed')
    first = fresh[0]
    try:
        still = first.recv(1) != b''
    except BlockingIOError:
        still = True
    except OSError:
        still = False
    check(still, 'an older fresh connection was closed before the idle kept-alive one')
    check(metric('savedmodel_http_connections_closed_total{reason="evicted"}') > before, 'no eviction counted')
    for c in fresh:
        c.close()
    keep.close()


def flood(model, nidle, nslow):
    have = raise_fd_limit(nidle + nslow + 256)
    if have < nidle + nslow + 256:
        scale = (have - 256) / float(nidle + nslow)
        nidle, nslow = int(nidle * scale), int(nslow * scale)
        print('flood: only %d descriptors: %d idle, %d slowloris' % (have, nidle, nslow))
    idle, slow = [], []
    for i in range(nidle + nslow):
        try:
            s = open_conn()
        except OSError as e:
            check(False, 'connection %d refused outright: %s' % (i, e))
            break
        if len(slow) * (nidle + nslow) < (i + 1) * nslow:  # spread evenly: the newest include some
            s.send(b'GET /v1/models/' + model.encode() + b' HTTP/1.1\r\nHost: t\r\n')
            slow.append(s)
        else:
            idle.append(s)
    ok, secs = status_ok(model)
    check(ok, 'status request during the flood')
    print('flood: %d idle + %d slowloris open; status answered in %.3f s' % (len(idle), len(slow), secs))
    # drip a byte a second: the server closes every slowloris connection at its header deadline
    deadline = time.monotonic() + 30
    alive = list(slow)
    while alive and time.monotonic() < deadline:
        time.sleep(1)
        still = []
        for s in alive:
            try:
                s.send(b'X')
                if s.recv(1) == b'':
                    continue
            except BlockingIOError:
                pass
            except OSError:
                continue
            still.append(s)
        alive = still
    check(not alive, '%d of %d slowloris connections still open after 30 s of dripping' % (len(alive), len(slow)))
    check(metric('savedmodel_http_connections_closed_total{reason="timed_out"}') > 0, 'no header deadline counted')
    ok, secs = status_ok(model)
    check(ok, 'status request after the flood')
    for s in idle + slow:
        s.close()


def reload_two_step(model, base, fixture, n):
    results = {'ok': 0, 'bad': []}
    stop = threading.Event()
    body = json.dumps({'instances': [1.0, 2.0, 5.0]}).encode()
    want = {'predictions': [2.5, 3.0, 4.5]}

    def client():
        while not stop.is_set():  # from before the copy until version 2 serves
            req = urllib.request.Request(BASE + '/v1/models/%s:predict' % model, data=body, method='POST')
            try:
                with urllib.request.urlopen(req, timeout=30) as r:
                    got = json.loads(r.read().decode())
                    if got == want:
                        results['ok'] += 1
                    else:
                        results['bad'].append(repr(got)[:200])
            except urllib.error.HTTPError as e:
                results['bad'].append('%d %s' % (e.code, e.read().decode()[:200]))
            except OSError as e:
                results['bad'].append(str(e))

    threads = [threading.Thread(target=client) for _ in range(4)]
    for t in threads:
        t.start()
    t_end = time.monotonic() + 120
    v2 = os.path.join(base, '2')
    os.makedirs(v2)
    shutil.copy(os.path.join(fixture, 'saved_model.pb'), v2)  # step 1: the graph alone
    time.sleep(2.5)                                             # several polls see it incomplete
    shutil.copytree(os.path.join(fixture, 'variables'), os.path.join(v2, 'variables'))  # step 2
    served = False
    for _ in range(100):  # version 2 becomes the one served once complete
        try:
            with urllib.request.urlopen(BASE + '/v1/models/%s' % model, timeout=30) as r:
                st = json.loads(r.read().decode())['model_version_status']
            served = any(v['version'] == '2' and v['state'] == 'AVAILABLE' for v in st)
        except (OSError, ValueError, KeyError):
            pass
        if served:
            break
        time.sleep(0.1)
    while results['ok'] + len(results['bad']) < n and time.monotonic() < t_end:
        time.sleep(0.05)
    stop.set()
    for t in threads:
        t.join()
    check(served, 'version 2 not served after its variables arrived')
    check(not results['bad'], '%d of %d requests failed during the two-step copy, first: %s' %
          (len(results['bad']), results['ok'] + len(results['bad']), results['bad'][:1]))
    check(results['ok'] + len(results['bad']) >= n, 'only %d requests ran' % (results['ok'] + len(results['bad'])))
    print('reload: %d requests during the two-step copy, %d failed' % (results['ok'] + len(results['bad']),
                                                                       len(results['bad'])))


if __name__ == '__main__':
    phase = sys.argv[2]
    if phase == 'strict':
        strict(sys.argv[3])
    elif phase == 'evict':
        evict(sys.argv[3], int(sys.argv[4]))
    elif phase == 'flood':
        flood(sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    elif phase == 'reload':
        reload_two_step(sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6]))
    else:
        sys.exit('unknown phase ' + phase)
    sys.exit(1 if failures else 0)
