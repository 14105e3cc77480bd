#!/usr/bin/env python3
"""Writes tests/fixtures/cli-run/: what TensorFlow's saved_model_cli prints for `run` and `scan`.

tests/cli/run.sh and scan.sh run `savedmodel` with the same arguments and compare stdout and the
exit status. Cases come from the committed zoo (tests/fixtures/zoo/*/golden/outputs/<tags>__<sig>,
whose inputs/ hold the .npy files; string inputs stored as JSON are converted to 'S' .npy files
under cli-run/inputs/), from hand-written --input_exprs / --input_examples / .npz / --outdir /
error cases, and from ../shared/fixtures/tf-serving when that directory exists.

cases.tsv: one case a line, tab-separated: name, expected exit status (0 or 1), the directory
to run in (@TMP@ = a fresh temporary directory, else @SRC@), then the arguments after the
program name. @ZOO@, @FX@ (this directory) and @SHARED@ (../shared) stand for paths. The
expected stdout is <name>.out (compared when the status is 0, and for outdir cases also when it
is 1). Only stdout is compared: TensorFlow's errors are Python tracebacks.

Run with the TF venv: /tmp/tfvenv/bin/python tools/make_cli_run_goldens.py
"""
import base64
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

SRC = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
ZOO = os.path.join(SRC, 'tests', 'fixtures', 'zoo')
FX = os.path.join(SRC, 'tests', 'fixtures', 'cli-run')
SHARED = os.path.normpath(os.path.join(SRC, '..', 'shared'))
CLI = os.path.join(os.path.dirname(sys.executable), 'saved_model_cli')
MAX_STDOUT = 20000  # keep goldens small: cases printing more are left out
# saved_model_cli takes seconds per call; these models cover TF1 and TF2 styles, every dtype,
# tables, state and tf.Example without running the whole zoo (the zoo tests do that).
RUN_MODELS = ['tf1_square', 'tf1_multi_tags', 'tf1_labels', 'tf1_classify_regress', 'tf1_counter', 'tf1_vocab',
              'tf1_cnn', 'tf2_module', 'all_dtypes', 'tf2_multi_sig', 'tf2_math', 'keras_seed_cnn']
SCAN_MODELS = ['tf1_square', 'tf1_labels', 'tf2_module', 'keras_seed_cnn']


def sub(arg, tmp):
    return (arg.replace('@ZOO@', ZOO).replace('@FX@', FX).replace('@SHARED@', SHARED)
            .replace('@TMP@', tmp))


def zoo_cases():
    cases = []
    for model in sorted(os.listdir(ZOO)):
        outdir = os.path.join(ZOO, model, 'golden', 'outputs')
        if not os.path.isdir(outdir):
            continue
        if model in SCAN_MODELS:
            cases.append(('scan_%s' % model, 'scan', ['scan', '--dir', '@ZOO@/%s/model' % model]))
        if model not in RUN_MODELS:
            continue
        for d in sorted(os.listdir(outdir)):
            if '__b' in d:  # batch variants: the base case is enough here
                continue
            sig = json.load(open(os.path.join(outdir, d, 'signature.json')))
            parts = []
            for alias, info in sorted(sig.get('inputs', {}).items()):
                f = info['file']
                if f.endswith('.npy'):
                    parts.append('%s=@ZOO@/%s/golden/outputs/%s/%s' % (alias, model, d, f))
                else:  # strings kept as JSON: converted to a bytes .npy here
                    j = json.load(open(os.path.join(outdir, d, f)))
                    vals = j['value']
                    if j.get('encoding') == 'base64':
                        vals = np.vectorize(base64.b64decode, otypes=[object])(np.array(vals, dtype=object)) \
                            if np.ndim(vals) else base64.b64decode(vals)
                    arr = np.array(vals, dtype=object).astype(bytes) if np.ndim(vals) else np.array(vals)
                    name = '%s__%s__%s.npy' % (model, d, alias)
                    os.makedirs(os.path.join(FX, 'inputs'), exist_ok=True)
                    np.save(os.path.join(FX, 'inputs', name), arr)
                    parts.append('%s=@FX@/inputs/%s' % (alias, name))
            tags = ','.join(sig['tags'])
            args = ['run', '--dir', '@ZOO@/%s/model' % model, '--tag_set', tags, '--signature_def', sig['signature']]
            if parts:
                args += ['--inputs', ';'.join(parts)]
            cases.append(('run_%s__%s' % (model, d), 'run', args))
    return cases


def extra_cases():
    os.makedirs(os.path.join(FX, 'inputs'), exist_ok=True)
    np.savez(os.path.join(FX, 'inputs', 'xy.npz'), x=np.array([[1.0, 2.0], [3.0, 4.0]]), y=np.arange(3))
    np.savez_compressed(os.path.join(FX, 'inputs', 'one.npz'), only=np.array([[0.5, -2.0]], np.float32))
    np.save(os.path.join(FX, 'inputs', 'ints.npy'), np.array([[1, 2], [3, -4]], np.int64))
    np.save(os.path.join(FX, 'inputs', 'big.npy'), np.arange(1200, dtype=np.float32).reshape(40, 30) / 7)
    sq = ['--dir', '@ZOO@/tf1_square/model', '--tag_set', 'serve', '--signature_def', 'serving_default']
    c = [
        ('exprs_nested', 'run', ['run'] + sq + ['--input_exprs', 'x=[[1.5, 2], [3, 4]]']),
        ('exprs_scalar', 'run', ['run'] + sq + ['--input_exprs', 'x=7']),
        ('exprs_tuple_bool', 'run', ['run'] + sq + ['--input_exprs', 'x=(True, False, 1e20, -0.0)']),
        ('exprs_small_fmt', 'run', ['run'] + sq + ['--input_exprs', 'x=[1e-3, 1e-5, 123456.7, 3.25e8]']),
        ('exprs_strings_parse', 'run', ['run'] + sq + ['--input_exprs', "x=['1.5', b'2']"]),
        ('npz_named', 'run', ['run'] + sq + ['--inputs', 'x=@FX@/inputs/xy.npz[x]']),
        ('npz_single', 'run', ['run'] + sq + ['--inputs', 'x=@FX@/inputs/one.npz']),
        ('npy_cast', 'run', ['run'] + sq + ['--inputs', 'x=@FX@/inputs/ints.npy']),
        ('npy_large', 'run', ['run'] + sq + ['--inputs', 'x=@FX@/inputs/big.npy']),
        ('override', 'run', ['run'] + sq + ['--inputs', 'x=@FX@/inputs/ints.npy', '--input_exprs', 'x=[2.0]']),
        ('outdir', 'run', ['run'] + sq + ['--input_exprs', 'x=[[1.0, 2.0]]', '--outdir', '@TMP@/out']),
        ('err_npz_many', 'run', ['run'] + sq + ['--inputs', 'x=@FX@/inputs/xy.npz']),
        ('err_npz_missing', 'run', ['run'] + sq + ['--inputs', 'x=@FX@/inputs/xy.npz[z]']),
        ('err_bad_key', 'run', ['run'] + sq + ['--input_exprs', 'nope=[1.0]']),
        ('err_not_literal', 'run', ['run'] + sq + ['--input_exprs', 'x=np.ones(3)']),
        ('err_no_inputs', 'run', ['run'] + sq),
        ('err_bad_inputs_format', 'run', ['run'] + sq + ['--inputs', 'x']),
        ('err_tag_set', 'run', ['run', '--dir', '@ZOO@/tf1_square/model', '--tag_set', 'nope',
                                '--signature_def', 'serving_default', '--input_exprs', 'x=[1.0]']),
        ('err_ragged', 'run', ['run'] + sq + ['--input_exprs', 'x=[[1], [2, 3]]']),
        ('scan_tag_set', 'scan', ['scan', '--dir', '@ZOO@/tf1_multi_tags/model', '--tag_set', 'serve, gpu']),
        ('scan_denylist', 'scan', ['scan', '--dir', '@ZOO@/tf1_multi_tags/model', '--op_denylist', ' Square,Foo,,']),
        ('scan_denylist_empty', 'scan', ['scan', '--dir', '@ZOO@/tf1_square/model', '--op_denylist', ',']),
    ]
    cr = os.path.join(ZOO, 'tf1_classify_regress', 'model')
    if os.path.isdir(cr):
        ex = '[{"x":[1.0],"y":[3]},{"x":[-2.5]}]'
        c.append(('examples_classify', 'run', ['run', '--dir', '@ZOO@/tf1_classify_regress/model', '--tag_set',
                                               'serve', '--signature_def', 'classify_x_to_y', '--input_examples',
                                               'inputs=' + ex]))
        c.append(('examples_regress', 'run', ['run', '--dir', '@ZOO@/tf1_classify_regress/model', '--tag_set',
                                              'serve', '--signature_def', 'regress_x_to_y', '--input_examples',
                                              'inputs=' + ex]))
    return c


def shared_cases():
    ts = os.path.join(SHARED, 'fixtures', 'tf-serving')
    if not os.path.isdir(ts):
        return []
    hp2 = '@SHARED@/fixtures/tf-serving/saved_model_half_plus_two_cpu/00000123'
    ex = 'inputs=[{"x":[1.0]},{"x":[2.0]},{"x":[5.0]}]'
    c = [
        ('ts_hp2_predict', 'run', ['run', '--dir', hp2, '--tag_set', 'serve', '--signature_def', 'serving_default',
                                   '--input_exprs', 'x=[[1.0], [2.0], [5.0]]']),
        ('ts_hp2_regress', 'run', ['run', '--dir', hp2, '--tag_set', 'serve', '--signature_def', 'regress_x_to_y',
                                   '--input_examples', ex]),
        ('ts_hp2_classify', 'run', ['run', '--dir', hp2, '--tag_set', 'serve', '--signature_def', 'classify_x_to_y',
                                    '--input_examples', ex]),
        ('ts_hp3', 'run', ['run', '--dir', '@SHARED@/fixtures/tf-serving/saved_model_half_plus_three/00000123',
                           '--tag_set', 'serve', '--signature_def', 'serving_default',
                           '--input_exprs', 'x=[[1.0], [2.0], [5.0]]']),
        ('ts_matrix', 'run', ['run', '--dir', '@SHARED@/fixtures/tf-serving/matrix_half_plus_two/1', '--tag_set',
                              'serve', '--signature_def', 'serving_default', '--input_exprs',
                              'x=[[[1, 2, 3], [4, 5, 6], [7, 8, 9]]]']),
        ('ts_tf2', 'run', ['run', '--dir', '@SHARED@/fixtures/tf-serving/saved_model_half_plus_two_tf2_cpu/00000123',
                           '--tag_set', 'serve', '--signature_def', 'serving_default', '--input_exprs', 'x=3.0']),
        ('ts_counter', 'run', ['run', '--dir', '@SHARED@/fixtures/tf-serving/saved_model_counter/00000123',
                               '--tag_set', 'serve', '--signature_def', 'incr_counter_by', '--input_exprs',
                               'delta=2.5']),
        ('ts_scan_hp2', 'scan', ['scan', '--dir', hp2]),
    ]
    return c


def run_case(case):
    name, kind, args = case
    tmp = tempfile.mkdtemp(prefix='smcli_')
    try:
        env = dict(os.environ, PYTHONHASHSEED='0', TF_CPP_MIN_LOG_LEVEL='3', CUDA_VISIBLE_DEVICES='')
        p = subprocess.run([CLI] + [sub(a, tmp) for a in args], cwd=tmp, env=env, capture_output=True,
                           timeout=600)
        out = p.stdout.decode('utf-8', 'surrogateescape')
        outdir_files = {}
        if os.path.isdir(os.path.join(tmp, 'out')):
            for f in sorted(os.listdir(os.path.join(tmp, 'out'))):
                outdir_files[f] = open(os.path.join(tmp, 'out', f), 'rb').read()
        return name, args, 0 if p.returncode == 0 else 1, out.replace(tmp, '@TMP@'), outdir_files, p.stderr
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    if os.path.isdir(FX):
        for f in os.listdir(FX):
            if f.endswith('.out') or f == 'cases.tsv':
                os.remove(os.path.join(FX, f))
    os.makedirs(FX, exist_ok=True)
    cases = zoo_cases() + extra_cases() + shared_cases()
    lines = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as ex:
        for name, args, rc, out, files, err in ex.map(run_case, cases):
            if len(out) > MAX_STDOUT:
                print('left out (stdout too long):', name)
                continue
            if rc and name.startswith('run_'):
                print('left out (TF fails):', name, err.decode(errors='replace').strip().splitlines()[-1:])
                continue
            uses_tmp = any('@TMP@' in a for a in args)
            lines.append('\t'.join([name, str(rc), '@TMP@' if uses_tmp else '@SRC@'] + args))
            with open(os.path.join(FX, name + '.out'), 'w', encoding='utf-8', errors='surrogateescape') as f:
                f.write(out)
            for fn, data in files.items():
                with open(os.path.join(FX, name + '.' + fn), 'wb') as f:
                    f.write(data)
            print(name, 'rc', rc)
    with open(os.path.join(FX, 'cases.tsv'), 'w') as f:
        f.write('\n'.join(sorted(lines)) + '\n')


if __name__ == '__main__':
    main()
