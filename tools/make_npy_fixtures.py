#!/usr/bin/env python3
"""Writes tests/fixtures/npy/: small .npy/.npz files made by numpy for tests/unit/test_npy.c.

Values are np.arange-based so the C test can recompute them. Run with the TF venv's python:
  /tmp/tfvenv/bin/python tools/make_npy_fixtures.py
"""
import io
import os
import sys

import numpy as np

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tests', 'fixtures', 'npy')
os.makedirs(root, exist_ok=True)


def save(name, arr, **kw):
    path = os.path.join(root, name)
    if kw:
        with open(path, 'wb') as f:
            np.lib.format.write_array(f, arr, **kw)
    else:
        np.save(path, arr, allow_pickle=True)


for code in ['f4', 'f8', 'f2', 'i1', 'i2', 'i4', 'i8', 'u1', 'u2', 'u4', 'u8', 'c8', 'c16']:
    a = np.arange(6).astype(code).reshape(2, 3)
    if code[0] == 'i':
        a = a - 2  # some negatives
    save('%s_2x3.npy' % code, a)
save('b1.npy', np.array([True, False, True, True]))
save('be_f4.npy', np.arange(6, dtype='>f4').reshape(2, 3))
save('be_i8.npy', np.arange(6, dtype='>i8').reshape(3, 2) - 2)
save('be_c8.npy', np.arange(3, dtype='>c8') * (1 + 1j))
save('fortran_2x3.npy', np.asfortranarray(np.arange(6, dtype='<f4').reshape(2, 3)))
save('fortran_2x3x4.npy', np.asfortranarray(np.arange(24, dtype='<i4').reshape(2, 3, 4)))
save('scalar_f8.npy', np.array(2.5))
save('empty_0x3.npy', np.zeros((0, 3), np.float32))
save('bytes.npy', np.array([b'ab', b'', b'xyz']))
save('unicode.npy', np.array(['h\u00e9llo', 'a', '\u20ac', '\U0001f600']))
save('be_unicode.npy', np.array(['ab', 'c'], dtype='>U2'))
save('v2_f4.npy', np.arange(6, dtype='<f4').reshape(2, 3), version=(2, 0))
save('v3_f4.npy', np.arange(6, dtype='<f4').reshape(2, 3), version=(3, 0))
save('object.npy', np.array([1, 'a'], dtype=object))
save('structured.npy', np.zeros(2, dtype=[('a', '<i4'), ('b', '<f4')]))
save('datetime.npy', np.array(['2020-01-01'], dtype='datetime64[D]'))
save('long_f4.npy', np.arange(1500, dtype='<f4'))
np.savez(os.path.join(root, 'stored.npz'), x=np.arange(3), y=np.ones(2))
np.savez_compressed(os.path.join(root, 'deflated.npz'), a=np.arange(6, dtype='<f4').reshape(2, 3),
                    b=np.array([b'q', b'rs']))
np.savez(os.path.join(root, 'single.npz'), only=np.arange(4, dtype='<i4'))
np.savez(os.path.join(root, 'with_object.npz'), o=np.array([1, 'a'], dtype=object))


def oversized_member(path):
    """A deflated member 'x' whose .npy header describes 2 floats (136 bytes in all) but which
    inflates to 64 KiB more: readers must refuse it from the header, before inflating it all."""
    import struct
    import zipfile
    with zipfile.ZipFile(path, 'w', zipfile.ZIP_DEFLATED) as z:
        with z.open('x.npy', 'w') as f:
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.array([1, 2], dtype='<f4'))
            f.write(buf.getvalue() + bytes(65536))


oversized_member(os.path.join(root, 'oversized_member.npz'))
print('wrote', len(os.listdir(root)), 'files to', os.path.normpath(root))
