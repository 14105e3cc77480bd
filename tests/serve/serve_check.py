"""serve_check.py - drives a running `savedmodel serve` over loopback HTTP (tests/cli/serve.sh).

usage: serve_check.py PORT PHASE [ARGS]
  basic MODEL        predict/status/metadata, 4xx bodies, 413, metrics
  wait_version MODEL V SECONDS   polls status until version V is AVAILABLE and serving
  predict MODEL      one tutorial predict
  label MODEL L V    label L names version V (status, and predict through /labels/L)
Exit status 0 when every check passes; failures are printed."""
import json
import sys
import time
import urllib.error
import urllib.request

PORT = int(sys.argv[1])
BASE = 'http://127.0.0.1:%d' % PORT
failures = []


def call(path, body=None, method=None, raw=None):
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(BASE + path, data=data, method=method or ('POST' if data is not None else 'GET'))
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def check(cond, what):
    if not cond:
        failures.append(what)
        print('FAIL:', what)


def expect(path, body, status, want=None, error=None, raw=None, method=None):
    code, text = call(path, body, raw=raw, method=method)
    check(code == status, '%s: status %d, wanted %d (%s)' % (path, code, status, text[:200]))
    try:
        got = json.loads(text)
    except ValueError:
        check(False, '%s: body is not JSON: %r' % (path, text[:200]))
        return None
    if want is not None:
        check(got == want, '%s: %r != %r' % (path, got, want))
    if error is not None:
        check(isinstance(got, dict) and error in got.get('error', ''), '%s: error %r lacks %r' % (path, got, error))
    return got


def basic(model):
    m = '/v1/models/' + model
    expect(m + ':predict', {'instances': [1.0, 2.0, 5.0]}, 200, {'predictions': [2.5, 3.0, 4.5]})
    expect(m + ':predict', {'inputs': [[1.0], [2.0]]}, 200, {'outputs': [[2.5], [3.0]]})
    expect(m + ':regress', {'signature_name': 'regress_x_to_y', 'examples': [{'x': 2.0}]}, 200, {'results': [3.0]})
    expect(m + ':classify', {'signature_name': 'classify_x_to_y', 'examples': [{'x': 2.0}]}, 200,
           {'results': [[['', 3.0]]]})
    st = expect(m, None, 200)
    check(st and st['model_version_status'][0]['state'] == 'AVAILABLE', 'status: %r' % st)
    md = expect(m + '/metadata', None, 200)
    check(md and 'serving_default' in md['metadata']['signature_def']['signature_def'], 'metadata: %r' % md)
    # malformed JSON, wrong types, unknown model/version/signature: 4xx with an error body
    expect(m + ':predict', None, 400, error='JSON Parse error', raw=b'{"instances": [1.0,')
    expect(m + ':predict', {'instances': ['a']}, 400, error='not of expected type: float')
    expect(m + ':predict', {'signature_name': 'nope', 'instances': [1.0]}, 400, error='nope')
    expect('/v1/models/nope:predict', {'instances': [1.0]}, 404, error='nope')
    expect(m + '/versions/999:predict', {'instances': [1.0]}, 404, error=model)
    expect('/v1/models', None, 400, error='Missing model name')
    expect('/nothing/here', None, 404, error='Not found')
    # an oversized body: 413 with an error body (the limit is 100000 bytes in serve.sh)
    big = b'{"instances": [' + b'1.0,' * 40000 + b'1.0]}'
    expect(m + ':predict', None, 413, error='larger than the limit', raw=big)
    # the server still serves after all that
    expect(m + ':predict', {'instances': [1.0]}, 200, {'predictions': [2.5]})
    code, text = call('/monitoring/prometheus/metrics')
    check(code == 200 and ':tensorflow:serving:request_count{model_name="%s",status="OK"}' % model in text,
          'metrics: %d %r' % (code, text[:300]))


def wait_version(model, version, seconds):
    t0 = time.time()
    while time.time() - t0 < seconds:
        code, text = call('/v1/models/%s/versions/%s' % (model, version))
        if code == 200 and json.loads(text)['model_version_status'][0]['state'] == 'AVAILABLE':
            code, text = call('/v1/models/%s:predict' % model, {'instances': [1.0]})
            if code == 200:
                print('version %s served after %.2f s' % (version, time.time() - t0))
                return
        time.sleep(0.05)
    check(False, 'version %s of %s not served within %s s' % (version, model, seconds))


phase = sys.argv[2]
if phase == 'basic':
    basic(sys.argv[3])
elif phase == 'wait_version':
    wait_version(sys.argv[3], sys.argv[4], float(sys.argv[5]))
elif phase == 'label':
    m, label, version = sys.argv[3], sys.argv[4], sys.argv[5]
    st = expect('/v1/models/%s/labels/%s' % (m, label), None, 200)
    check(st and st['model_version_status'][0]['version'] == version, 'label %s: %r' % (label, st))
    expect('/v1/models/%s/labels/%s:predict' % (m, label), {'instances': [1.0]}, 200, {'predictions': [2.5]})
elif phase == 'predict':
    expect('/v1/models/%s:predict' % sys.argv[3], {'instances': [1.0, 2.0, 5.0]}, 200,
           {'predictions': [2.5, 3.0, 4.5]})
sys.exit(1 if failures else 0)
