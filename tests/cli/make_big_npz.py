#!/usr/bin/env python3
"""make_big_npz.py OUT [MIB] - an .npz whose member 'x' is a deflated .npy of shape (1, 2) float32
followed by MIB MiB of zeros (default 256; about 1 KB of deflate per MiB): np.load reads only the
8 bytes the header describes, and so must we (tests/cli/run.sh, bench/hostile_memory.sh)."""
import struct
import sys
import zipfile

hdr = b"{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2), }"
hdr += b' ' * (63 - (10 + len(hdr)) % 64) + b'\n'
with zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_DEFLATED) as z:
    with z.open('x.npy', 'w', force_zip64=True) as f:
        f.write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(hdr)) + hdr + struct.pack('<2f', 1, 2))
        for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 else 256):
            f.write(bytes(1 << 20))
