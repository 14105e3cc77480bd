#!/usr/bin/env python3
"""make_malformed.py - writes tests/fixtures/malformed/<case>/: one small, deliberately broken
SavedModel per class of TensorFlow's SavedModel security advisories.

Standard library only (no protobuf, no TensorFlow): each case is a saved_model.pbtxt (which the
loader reads when there is no .pb) written from one template, and, where variables matter, a
variables bundle written here byte by byte (LevelDB table, masked CRC-32C, BundleEntryProto in
hand-encoded wire format). tests/unit/test_malformed.c loads each case and expects its own error;
tests/cli/validate.sh runs `savedmodel validate` over them. The sound base model is written as
case "ok" so that the tests know the template itself loads.

Usage: tools/make_malformed.py [--out tests/fixtures/malformed]
"""
import argparse
import os
import shutil
import struct

# ---- CRC-32C and the LevelDB table format of variables.index ------------------------------------
_T = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    _T.append(c)


def crc32c(b):
    c = 0xFFFFFFFF
    for x in b:
        c = _T[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked(c):
    return ((((c >> 15) | (c << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(num, wt, payload):
    tag = varint(num << 3 | wt)
    if wt == 0:
        return tag + varint(payload)
    if wt == 2:
        return tag + varint(len(payload)) + payload
    if wt == 5:
        return tag + struct.pack('<I', payload)
    raise ValueError(wt)


def block(entries):
    """A table block: every entry a restart point (no key sharing), as the index block."""
    out = bytearray()
    restarts = []
    for k, v in entries:
        restarts.append(len(out))
        out += varint(0) + varint(len(k)) + varint(len(v)) + k + v
    for r in restarts or [0]:
        out += struct.pack('<I', r)
    out += struct.pack('<I', len(restarts or [0]))
    return bytes(out)


def with_trailer(blk):
    return blk + b'\x00' + struct.pack('<I', masked(crc32c(blk + b'\x00')))


def table(entries):
    data = block(entries)
    out = bytearray(with_trailer(data))
    data_handle = (0, len(data))
    meta = block([])
    meta_handle = (len(out), len(meta))
    out += with_trailer(meta)
    last_key = entries[-1][0]
    index = block([(last_key, varint(data_handle[0]) + varint(data_handle[1]))])
    index_handle = (len(out), len(index))
    out += with_trailer(index)
    footer = varint(meta_handle[0]) + varint(meta_handle[1]) + varint(index_handle[0]) + varint(index_handle[1])
    footer += b'\x00' * (40 - len(footer))
    footer += struct.pack('<Q', 0xDB4775248B80FB57)
    return bytes(out + footer)


DT_FLOAT, DT_DOUBLE = 1, 2


def bundle(dirpath, tensors, crc_delta=0, offset_delta=0):
    """tensors: [(key, dtype, dims, raw bytes)]; one shard. crc_delta / offset_delta damage the
    last entry's checksum / offset."""
    os.makedirs(dirpath, exist_ok=True)
    header = field(1, 0, 1) + field(3, 2, field(1, 0, 1))  # num_shards 1, version { producer 1 }
    entries = [(b'', header)]
    data = bytearray()
    for i, (key, dtype, dims, raw) in enumerate(sorted(tensors)):
        last = i == len(tensors) - 1
        shape = b''.join(field(2, 2, field(1, 0, d)) for d in dims)
        e = field(1, 0, dtype) + field(2, 2, shape)
        off = len(data) + (offset_delta if last else 0)
        if off:
            e += field(4, 0, off)
        e += field(5, 0, len(raw))
        e += field(6, 5, (masked(crc32c(raw)) + (crc_delta if last else 0)) & 0xFFFFFFFF)
        entries.append((key.encode(), e))
        data += raw
    with open(os.path.join(dirpath, 'variables.index'), 'wb') as f:
        f.write(table(entries))
    with open(os.path.join(dirpath, 'variables.data-00000-of-00001'), 'wb') as f:
        f.write(bytes(data))


# ---- the model template -------------------------------------------------------------------------
def attr(key, body):
    return 'attr { key: "%s" value { %s } } ' % (key, body)


def shape(dims):
    return 'shape { %s }' % ' '.join('dim { size: %d }' % d for d in dims)


def node(name, op, inputs=(), attrs=''):
    ins = ' '.join('input: "%s"' % i for i in inputs)
    return 'node { name: "%s" op: "%s" %s %s}\n' % (name, op, ins, attrs)


def sconst(name, values, dims=None):
    dims = [len(values)] if dims is None else dims
    vals = ' '.join('string_val: "%s"' % v for v in values)
    return node(name, 'Const', (), attr('dtype', 'type: DT_STRING') +
                attr('value', 'tensor { dtype: DT_STRING tensor_shape { %s } %s }' %
                     (' '.join('dim { size: %d }' % d for d in dims), vals)))


def fconst(name, tensor_body, dtype='DT_FLOAT'):
    return node(name, 'Const', (), attr('dtype', 'type: %s' % dtype) + attr('value', 'tensor { %s }' % tensor_body))


def model(extra_nodes='', var_shape=(2,), restore_dtype='DT_FLOAT', y_inputs=('x', 'read'), outputs=None,
          library='', assets=None, placeholder_attrs=None, omit=(), collections=''):
    """The base: y = x + v for a float32 resource variable v of shape [2], restored TF1-style."""
    ph = placeholder_attrs if placeholder_attrs is not None else attr('dtype', 'type: DT_FLOAT') + attr(
        'shape', shape([-1, 2]))
    nodes = node('x', 'Placeholder', (), ph)
    nodes += node('v', 'VarHandleOp', (), attr('dtype', 'type: DT_FLOAT') + attr('shape', shape(var_shape)) +
                  attr('shared_name', 's: "v"'))
    nodes += node('read', 'ReadVariableOp', ('v',), attr('dtype', 'type: DT_FLOAT'))
    nodes += node('y', 'AddV2', y_inputs, attr('T', 'type: DT_FLOAT'))
    nodes += sconst('save/Const', ['model'], dims=[])
    nodes += sconst('save/RestoreV2/tensor_names', ['v'])
    nodes += sconst('save/RestoreV2/shape_and_slices', [''])
    nodes += node('save/RestoreV2', 'RestoreV2',
                  ('save/Const', 'save/RestoreV2/tensor_names', 'save/RestoreV2/shape_and_slices'),
                  attr('dtypes', 'list { type: %s }' % restore_dtype))
    nodes += node('save/Identity', 'Identity', ('save/RestoreV2',), attr('T', 'type: %s' % restore_dtype))
    nodes += node('save/AssignVariableOp', 'AssignVariableOp', ('v', 'save/Identity'),
                  attr('dtype', 'type: %s' % restore_dtype))
    nodes += node('save/restore_all', 'NoOp', ('^save/AssignVariableOp',))
    nodes += extra_nodes
    outs = outputs or {'y': 'y:0'}
    sig_out = ''.join('outputs { key: "%s" value { name: "%s" dtype: DT_FLOAT } }\n' % (k, v)
                      for k, v in sorted(outs.items()))
    asset_defs = ''
    for tensor, fn in (assets or []):
        asset_defs += 'asset_file_def { tensor_info { name: "%s" dtype: DT_STRING } filename: "%s" }\n' % (tensor, fn)
    lib = 'library { %s }\n' % library if library else ''
    return ('saved_model_schema_version: 1\n'
            'meta_graphs {\n'
            '  meta_info_def { tags: "serve" }\n'
            '  graph_def {\n' + nodes + lib + '  versions { producer: 1000 }\n  }\n'
            '  saver_def { filename_tensor_name: "save/Const:0" restore_op_name: "save/restore_all" version: V2 }\n'
            '  signature_def { key: "serving_default" value {\n'
            '    inputs { key: "x" value { name: "x:0" dtype: DT_FLOAT tensor_shape { dim { size: -1 } dim { size: 2 } } } }\n'
            + sig_out +
            '    method_name: "tensorflow/serving/predict" } }\n' + asset_defs + collections + '}\n')


V = struct.pack('<2f', 1.0, 2.0)


def fn_calling(name, callee):
    """A FunctionDef `name` (float -> float) whose body calls `callee` through PartitionedCall."""
    return ('function { signature { name: "%s" input_arg { name: "a" type: DT_FLOAT } '
            'output_arg { name: "r" type: DT_FLOAT } } '
            'node_def { name: "call" op: "PartitionedCall" input: "a" %s%s%s} '
            'ret { key: "r" value: "call:output:0" } }\n' %
            (name, attr('Tin', 'list { type: DT_FLOAT }'), attr('Tout', 'list { type: DT_FLOAT }'),
             attr('f', 'func { name: "%s" }' % callee)))


def fn_tree(levels, calls=3, pad=0):
    """Functions f0 .. f<levels-1>: each calls the next `calls` times in a chain (the last one is an
    Identity), so inlining f0 makes calls**(levels-1) nodes from a few KB; `pad` characters lengthen
    every node name (inlined names grow with each level)."""
    lib = ''
    for i in range(levels):
        sig = ('signature { name: "f%d" input_arg { name: "a" type: DT_FLOAT } '
               'output_arg { name: "r" type: DT_FLOAT } } ' % i)
        if i == levels - 1:
            body = 'node_def { name: "id" op: "Identity" input: "a" %s} ' % attr('T', 'type: DT_FLOAT')
            ret = 'id:output:0'
        else:
            body, prev = '', 'a'
            for k in range(calls):
                nm = 'c%d%s' % (k, 'x' * pad)
                body += ('node_def { name: "%s" op: "PartitionedCall" input: "%s" %s%s%s} ' %
                         (nm, prev, attr('Tin', 'list { type: DT_FLOAT }'), attr('Tout', 'list { type: DT_FLOAT }'),
                          attr('f', 'func { name: "f%d" }' % (i + 1))))
                prev = nm + ':output:0'
            ret = prev
        lib += 'function { %s%sret { key: "r" value: "%s" } }\n' % (sig, body, ret)
    return lib


CALL_F0 = node('fy', 'PartitionedCall', ('x',), attr('Tin', 'list { type: DT_FLOAT }') +
               attr('Tout', 'list { type: DT_FLOAT }') + attr('f', 'func { name: "f0" }'))

CALL_F = node('fy', 'PartitionedCall', ('x',), attr('Tin', 'list { type: DT_FLOAT }') +
              attr('Tout', 'list { type: DT_FLOAT }') + attr('f', 'func { name: "f" }'))

def table_from_file(path):
    """A TF1 vocabulary table whose initializer (the table_initializer collection, run at load)
    reads `path`, a Const: nothing confines it in TensorFlow."""
    nodes = node('table', 'HashTableV2', (), attr('key_dtype', 'type: DT_STRING') +
                 attr('value_dtype', 'type: DT_INT64') + attr('shared_name', 's: "t"'))
    nodes += sconst('table_path', [path], dims=[])
    nodes += node('init_table', 'InitializeTableFromTextFileV2', ('table', 'table_path'),
                  attr('key_index', 'i: -2') + attr('value_index', 'i: -1'))
    return model(nodes, collections='collection_def { key: "table_initializer" value { node_list { value: '
                                    '"init_table" } } }\n')


# name -> (pbtxt, bundle tensors (None: v = [1, 2]), damage to the bundle / an assets dir to make)
CASES = {
    'ok': (model(), None, {}),
    # TensorProto decoding (Const values)
    'tensor_content_size': (model(fconst('c', 'dtype: DT_FLOAT tensor_shape { dim { size: 3 } } '
                                               'tensor_content: "\\000\\000\\200?\\000\\000\\000@"'),
                                  outputs={'y': 'y:0', 'c': 'c:0'}), None, {}),
    'negative_dim': (model(fconst('c', 'dtype: DT_FLOAT tensor_shape { dim { size: -5 } } float_val: 1'),
                           outputs={'y': 'y:0', 'c': 'c:0'}), None, {}),
    'huge_dim': (model(fconst('c', 'dtype: DT_FLOAT tensor_shape { dim { size: 4611686018427387904 } } float_val: 1'),
                       outputs={'y': 'y:0', 'c': 'c:0'}), None, {}),
    'overflowing_dims': (model(fconst('c', 'dtype: DT_FLOAT tensor_shape { dim { size: 4294967296 } '
                                           'dim { size: 4294967296 } dim { size: 4 } } float_val: 1'),
                               outputs={'y': 'y:0', 'c': 'c:0'}), None, {}),
    'attr_dtype_mismatch': (model(fconst('c', 'dtype: DT_FLOAT tensor_shape { } float_val: 1', dtype='DT_INT32'),
                                  outputs={'y': 'y:0', 'c': 'c:0'}), None, {}),
    # the load budget: a Const of [32768, 32768] from one value (4 GiB) (more values than elements are
    # not malformed: TF ignores the extra ones, and saves tf.zeros([0], tf.string) that way)
    'const_broadcast_huge': (model(fconst('c', 'dtype: DT_FLOAT tensor_shape { dim { size: 32768 } '
                                                'dim { size: 32768 } } float_val: 1'),
                                   outputs={'y': 'y:0', 'c': 'c:0'}), None, {}),
    # ... 14 functions each calling the next three times (3**13 = 1.6M nodes inlined), and long names
    'inline_bomb': (model(CALL_F0, library=fn_tree(14), outputs={'y': 'y:0', 'fy': 'fy:0'}), None, {}),
    'inline_long_names': (model(CALL_F0, library=fn_tree(10, pad=2000), outputs={'y': 'y:0', 'fy': 'fy:0'}),
                          None, {}),
    # graph structure
    'input_missing_node': (model(y_inputs=('x', 'nosuch')), None, {}),
    'input_out_of_range': (model(y_inputs=('x', 'read:3')), None, {}),
    'cycle': (model(node('a', 'Identity', ('b',), attr('T', 'type: DT_FLOAT')) +
                    node('b', 'Identity', ('a',), attr('T', 'type: DT_FLOAT')),
                    outputs={'y': 'y:0', 'a': 'a:0'}), None, {}),
    'recursive_function': (model(CALL_F, library=fn_calling('f', 'f'), outputs={'y': 'y:0', 'fy': 'fy:0'}),
                           None, {}),
    'mutually_recursive_functions': (model(CALL_F, library=fn_calling('f', 'g') + fn_calling('g', 'f'),
                                           outputs={'y': 'y:0', 'fy': 'fy:0'}), None, {}),
    # a fault 24 calls deep: one message of bounded length, not a frame per level
    'deep_call_chain': (model(CALL_F, library=fn_calling('f', 'f_with_a_rather_long_name_1') + ''.join(
        fn_calling('f_with_a_rather_long_name_%d' % i, 'f_with_a_rather_long_name_%d' % min(i + 1, 24))
        for i in range(1, 25)), outputs={'y': 'y:0', 'fy': 'fy:0'}), None, {}),
    'missing_required_attr': (model(placeholder_attrs=attr('shape', shape([-1, 2]))), None, {}),
    'negative_placeholder_dim': (model(placeholder_attrs=attr('dtype', 'type: DT_FLOAT') + attr('shape', shape([-7, 2]))),
                                 None, {}),
    # assets
    'asset_dotdot': (model(sconst('asset_path', ['a'], dims=[]), assets=[('asset_path:0', '../../secret.txt')]),
                     None, {'assets': True}),
    'asset_absolute': (model(sconst('asset_path', ['a'], dims=[]), assets=[('asset_path:0', '/etc/passwd')]),
                       None, {'assets': True}),
    # files the graph reads: confined to the export (TF reads any path)
    'table_file_outside': (table_from_file('/etc/passwd'), None, {}),
    'table_file_proc': (table_from_file('/proc/self/environ'), None, {}),
    # variables against the graph
    'variable_shape_mismatch': (model(var_shape=(3,)), None, {}),
    'variable_dtype_mismatch': (model(restore_dtype='DT_DOUBLE'), None, {}),
    'variable_missing_key': (model(), [('w', DT_FLOAT, [2], V)], {}),
    # bundle damage
    'bundle_offset_past_end': (model(), None, {'offset_delta': 100}),
    'bundle_checksum_mismatch': (model(), None, {'crc_delta': 1}),
    'bundle_truncated_data': (model(), None, {'truncate_data': 3}),
    'bundle_index_block_crc': (model(), None, {'flip_index': 9}),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument('--out', default=os.path.join(here, '..', 'tests', 'fixtures', 'malformed'))
    args = ap.parse_args()
    out = os.path.abspath(args.out)
    if os.path.isdir(out):
        for d in os.listdir(out):
            if os.path.isdir(os.path.join(out, d)):
                shutil.rmtree(os.path.join(out, d))
    os.makedirs(out, exist_ok=True)
    for name, (pbtxt, tensors, damage) in sorted(CASES.items()):
        d = os.path.join(out, name)
        os.makedirs(d)
        with open(os.path.join(d, 'saved_model.pbtxt'), 'w') as f:
            f.write(pbtxt)
        vdir = os.path.join(d, 'variables')
        bundle(vdir, tensors or [('v', DT_FLOAT, [2], V)], damage.get('crc_delta', 0), damage.get('offset_delta', 0))
        if 'truncate_data' in damage:
            p = os.path.join(vdir, 'variables.data-00000-of-00001')
            with open(p, 'rb') as f:
                b = f.read()
            with open(p, 'wb') as f:
                f.write(b[:-damage['truncate_data']])
        if 'flip_index' in damage:
            p = os.path.join(vdir, 'variables.index')
            with open(p, 'rb') as f:
                b = bytearray(f.read())
            b[damage['flip_index']] ^= 0x01
            with open(p, 'wb') as f:
                f.write(bytes(b))
        if damage.get('assets'):
            os.makedirs(os.path.join(d, 'assets'), exist_ok=True)
    print('wrote %d cases to %s' % (len(CASES), out))


if __name__ == '__main__':
    main()
