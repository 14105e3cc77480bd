#!/usr/bin/env python3
"""bench/bench_serve_flood.py - `savedmodel serve` against hostile clients (issue 17), not a test.

  python3 bench/bench_serve_flood.py [--build build] [--shared ../shared] [--baseline CLI]
                                     [--idle 2000] [--slow 1100] [--no-record]

(a) Request memory: each hostile body is POSTed to /v1/models/half_plus_two:predict on a fresh
    server; the server's peak RSS (VmHWM, reset through /proc/PID/clear_refs before each body) and
    its RSS once the answer is back are read from /proc. Bodies: 63 MB of "[]," inside
    {"instances": [...]}, the same four at once, 63 MB of "0," (packed numbers), 20 MB of nesting
    (refused by the decoding limit), and 63 MB of "[]," bare (refused at the first trailing byte).
(b) Connection floods: --idle silent connections and --slow slowloris clients (a header byte a
    second) are opened, then 20 status requests (GET /v1/models/half_plus_two) are timed one after
    another while the flood holds: p50 and max latency, and whether every one answered.
--baseline runs (a) and (b) with another build of the CLI too (e.g. the main branch's). Results are
printed and appended to bench/RESULTS.md with the date, commit, load average and command.
"""
import argparse
import os
import platform
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MODEL = 'half_plus_two'
MB = 1 << 20


def status_kb(pid, key):
    with open('/proc/%d/status' % pid) as f:
        for line in f:
            if line.startswith(key + ':'):
                return int(line.split()[1])
    return 0


class Server:
    def __init__(self, cli, fixture, extra=()):
        self.tmp = tempfile.mkdtemp(prefix='bench_flood_')
        os.makedirs(os.path.join(self.tmp, 'base'))
        subprocess.run(['cp', '-r', fixture, os.path.join(self.tmp, 'base', '1')], check=True)
        self.log = open(os.path.join(self.tmp, 'log'), 'w+')
        self.p = subprocess.Popen([cli, 'serve', '--model_name', MODEL, '--model_base_path',
                                   os.path.join(self.tmp, 'base'), '--rest_api_port', '0', '--rest_api_bind',
                                   '127.0.0.1'] + list(extra), stderr=self.log)
        self.port = None
        for _ in range(400):
            self.log.seek(0)
            for line in self.log.read().splitlines():
                if line.startswith('Exporting HTTP/REST API at:'):
                    self.port = int(line.split(':')[-1].split()[0])
            if self.port or self.p.poll() is not None:
                break
            time.sleep(0.05)
        if not self.port:
            raise SystemExit('server did not start: %s' % open(self.log.name).read()[-2000:])

    def reset_peak(self):
        try:
            with open('/proc/%d/clear_refs' % self.p.pid, 'w') as f:
                f.write('5')
            return True
        except OSError:
            return False

    def stop(self):
        self.p.terminate()
        try:
            self.p.wait(30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        subprocess.run(['rm', '-rf', self.tmp])


def post(port, body, timeout=600):
    req = urllib.request.Request('http://127.0.0.1:%d/v1/models/%s:predict' % (port, MODEL), data=body,
                                 method='POST')
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()[:200]
    except urllib.error.HTTPError as e:
        return e.code, e.read()[:200]
    except OSError as e:
        return 0, str(e).encode()


def bodies():
    n = 63 * MB // 3
    empty = b'{"instances":[' + b'[],' * (n - 1) + b'[]]}'
    nums = b'{"instances":[' + b'0,' * (63 * MB // 2 - 1) + b'0]}'
    depth = 10 * MB
    deep = b'{"instances":[1.0],"x":' + b'[' * depth + b']' * depth + b'}'
    bare = b'[],' * n
    return [('63 MB of "[]," in instances', empty, 1), ('4 x 63 MB of "[]," at once', empty, 4),
            ('63 MB of "0," in instances', nums, 1), ('20 MB of nesting', deep, 1),
            ('63 MB of "[]," bare (trailing data)', bare, 1)]


def memory(cli, fixture):
    rows = []
    for name, body, copies in bodies():
        s = Server(cli, fixture, ['--rest_api_max_request_bytes', str(100 * MB)])
        try:
            time.sleep(0.3)
            base = status_kb(s.p.pid, 'VmRSS')
            exact = s.reset_peak()
            peak = [0]
            done = threading.Event()

            def sample():
                while not done.is_set():
                    try:
                        peak[0] = max(peak[0], status_kb(s.p.pid, 'VmRSS'))
                    except OSError:
                        return
                    time.sleep(0.01)

            th = threading.Thread(target=sample)
            th.start()
            res = [None] * copies
            t0 = time.time()
            ts = [threading.Thread(target=lambda i=i: res.__setitem__(i, post(s.port, body))) for i in range(copies)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            secs = time.time() - t0
            time.sleep(0.5)
            done.set()
            th.join()
            hwm = status_kb(s.p.pid, 'VmHWM') if exact else peak[0]
            after = status_kb(s.p.pid, 'VmRSS')
            code, text = res[0]
            rows.append((name, len(body), copies, base, max(hwm, peak[0]), after, code,
                         text.decode('utf-8', 'replace').replace('\n', ' ')[:110], secs))
        finally:
            s.stop()
    return rows


def open_conn(port):
    c = socket.socket()
    c.settimeout(10)
    c.connect(('127.0.0.1', port))
    c.setblocking(False)
    return c


def flood(cli, fixture, nidle, nslow):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = nidle + nslow + 512
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    s = Server(cli, fixture)
    conns, slow, refused = [], [], 0
    try:
        for i in range(nidle + nslow):
            try:
                c = open_conn(s.port)
            except OSError:
                refused += 1
                continue
            if i >= nidle:
                try:
                    c.send(b'GET /v1/models/%s HTTP/1.1\r\nHost: b\r\n' % MODEL.encode())
                except OSError:
                    pass
                slow.append(c)
            conns.append(c)
        lat, ok = [], 0
        for i in range(20):
            for c in slow:  # the slowloris clients keep dripping
                try:
                    c.send(b'X')
                except OSError:
                    pass
            t0 = time.monotonic()
            try:
                with urllib.request.urlopen('http://127.0.0.1:%d/v1/models/%s' % (s.port, MODEL), timeout=30) as r:
                    ok += r.status == 200
            except (OSError, urllib.error.URLError):
                pass
            lat.append(time.monotonic() - t0)
            time.sleep(0.25)
        lat.sort()
        return {'opened': len(conns), 'refused': refused, 'ok': ok, 'p50': lat[len(lat) // 2], 'max': lat[-1]}
    finally:
        for c in conns:
            c.close()
        s.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--build', default=os.path.join(ROOT, 'build'))
    ap.add_argument('--shared', default=os.path.join(ROOT, '..', 'shared'))
    ap.add_argument('--baseline', help='another savedmodel CLI to measure the same way (e.g. main\'s)')
    ap.add_argument('--idle', type=int, default=2000)
    ap.add_argument('--slow', type=int, default=1100)
    ap.add_argument('--no-record', action='store_true')
    a = ap.parse_args()
    fixture = os.path.join(a.shared, 'fixtures', 'tf-serving', 'saved_model_half_plus_two_cpu', '00000123')
    clis = [('this build', os.path.join(a.build, 'savedmodel'))]
    if a.baseline:
        clis.append(('baseline', a.baseline))
    load = os.getloadavg()
    commit = subprocess.run(['git', '-C', ROOT, 'rev-parse', '--short', 'HEAD'], capture_output=True,
                            text=True).stdout.strip()
    out = ['', '### Serve under hostile clients (bench_serve_flood.py, %s, git %s)' % (time.strftime('%Y-%m-%d'), commit),
           '',
           '- `python3 bench/bench_serve_flood.py %s` on %s, %d cores; 1-minute load average at the start: %.2f' %
           (' '.join(sys.argv[1:]), platform.node() or 'this machine', os.cpu_count() or 0, load[0]), '']
    for label, cli in clis:
        rows = memory(cli, fixture)
        out += ['| %s: body | bytes | at once | RSS before | peak RSS | RSS after | answer | seconds |' % label,
                '|---|---|---|---|---|---|---|---|']
        for name, n, copies, base, hwm, after, code, text, secs in rows:
            out.append('| %s | %d | %d | %d MB | %d MB | %d MB | %d %s | %.1f |' %
                       (name, n, copies, base // 1024, hwm // 1024, after // 1024, code, text, secs))
        f = flood(cli, fixture, a.idle, a.slow)
        out += ['', '- %s: %d idle + %d slowloris connections (%d opened, %d refused at connect): %d/20 status '
                'requests answered, p50 %.3f s, max %.3f s' % (label, a.idle, a.slow, f['opened'], f['refused'],
                                                               f['ok'], f['p50'], f['max']), '']
    out.append('- 1-minute load average at the end: %.2f' % os.getloadavg()[0])
    text = '\n'.join(out) + '\n'
    print(text)
    if not a.no_record:
        with open(os.path.join(HERE, 'RESULTS.md'), 'a') as f:
            f.write(text)


if __name__ == '__main__':
    main()
