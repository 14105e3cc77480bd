"""The zoo's text builders: Keras preprocessing layers over strings (TextVectorization in int,
multi_hot, count and tf_idf modes with ngrams; StringLookup over split text, IntegerLookup; Hashing,
salted Hashing, HashedCrossing) and a tf.function of tf.strings / tf.ragged ops (regex_replace with
groups, split with maxsplit, unicode_decode / encode, as_string, ngrams, unsorted_segment_join,
ragged range). Each writes one SavedModel and returns its description for make_zoo.py (see the
builder contract there)."""

from zoo_common import SEED, _how_text, _keras, _keras_version, _rng, _tf  # noqa: F401

CORPUS = ["The quick, brown fox!", "jumps over the lazy dog dog", "THE DOG sleeps; the fox runs.",
          "Caf\u00e9 na\u00efve \u00fcber", "a b c d e f g h"]
POOL = CORPUS + ["", "  spaced   out  ", "fox fox fox fox fox fox fox fox fox fox", "unseen words only",
                 "\u65e5\u672c\u8a9e \u30c6\u30ad\u30b9\u30c8", "Mixed-CASE, punctuation... and: more!"]


def _sentences(n, rng, shape1=True):
    import numpy as np
    rows = [POOL[int(i)].encode() for i in rng.integers(0, len(POOL), n)]
    return np.array([[r] for r in rows] if shape1 else rows, dtype=object)


def build_keras_text_vectorization(model_dir):
    keras = _keras()
    import numpy as np
    L = keras.layers
    text = keras.Input(shape=(1,), dtype="string", name="text")
    tv_int = L.TextVectorization(max_tokens=30, ngrams=2, output_mode="int", output_sequence_length=7,
                                 name="tv_int")
    tv_ragged = L.TextVectorization(max_tokens=30, output_mode="int", name="tv_ragged")
    tv_multi = L.TextVectorization(max_tokens=25, ngrams=(1, 2), output_mode="multi_hot", name="tv_multi")
    tv_count = L.TextVectorization(max_tokens=25, output_mode="count", split="whitespace",
                                   standardize="lower", name="tv_count")
    tv_idf = L.TextVectorization(max_tokens=25, ngrams=2, output_mode="tf_idf", name="tv_idf")
    data = np.array([[c] for c in CORPUS])
    for layer in (tv_int, tv_ragged, tv_multi, tv_count, tv_idf):
        layer.adapt(data)
    outs = {"int": tv_int(text), "int_padded": tv_ragged(text), "multi_hot": tv_multi(text),
            "count": tv_count(text), "tf_idf": tv_idf(text)}
    m = keras.Model(text, outs, name="text_vectorization")
    m.export(model_dir, verbose=False)
    return {"style": "keras3",
            "description": "Keras TextVectorization on text[?,1] string, adapted on a 5-sentence corpus: "
                           "int (ngrams 2, output_sequence_length 7), int without a length (ragged -> "
                           "padded to the longest), multi_hot (ngrams (1,2)), count (standardize lower), "
                           "tf_idf (ngrams 2); lower_and_strip_punctuation and whitespace split by "
                           "default; " + _how_text("export") + ".",
            "inputs": {k: {"text": np.array([[POOL[i].encode()] for i in (0, 5, 6, 7, 8, 9, 10)], dtype=object)}
                       for k in ("serve", "serving_default")},
            "batch_inputs": lambda key, alias, n, rng: _sentences(n, rng) if alias == "text" else None}


def build_keras_lookup_hashing(model_dir):
    keras = _keras()
    tf = _tf()
    import numpy as np
    L = keras.layers
    text = keras.Input(shape=(), dtype="string", name="text")
    ids = keras.Input(shape=(3,), dtype="int64", name="ids")
    cat = keras.Input(shape=(1,), dtype="string", name="cat")
    num = keras.Input(shape=(1,), dtype="int64", name="num")
    words = L.Lambda(lambda t: tf.strings.split(t, maxsplit=4).to_tensor("", shape=[None, 5]), output_shape=(5,),
                     name="split")(text)
    vocab = ["the", "quick", "brown", "fox", "dog", "lazy"]
    outs = {
        "word_ids": L.StringLookup(vocabulary=vocab, mask_token="", name="word_ids")(words),
        "word_multi_hot": L.StringLookup(vocabulary=vocab, output_mode="multi_hot", name="word_mh")(words),
        "int_lookup": L.IntegerLookup(vocabulary=[3, 7, 11, 42], name="int_lookup")(ids),
        "int_count": L.IntegerLookup(vocabulary=[3, 7, 11, 42], output_mode="count", name="int_count")(ids),
        "hash": L.Hashing(num_bins=16, name="hash")(cat),
        "hash_salt": L.Hashing(num_bins=8, salt=[133, 137], name="hash_salt")(cat),
        "hash_mask": L.Hashing(num_bins=5, mask_value="", name="hash_mask")(cat),
        "cross": L.HashedCrossing(num_bins=32, name="cross")((cat, num)),
        "cross_one_hot": L.HashedCrossing(num_bins=6, output_mode="one_hot", name="cross_oh")((cat, num)),
    }
    m = keras.Model({"text": text, "ids": ids, "cat": cat, "num": num}, outs, name="lookup_hashing")
    m.export(model_dir, verbose=False)
    rng = _rng(SEED + 21)

    def batch(key, alias, n, r):
        if alias == "text":
            return _sentences(n, r, shape1=False)
        if alias == "cat":
            return np.array([[w] for w in r.choice([b"red", b"green", b"", b"blue", b"\xc3\xa9t\xc3\xa9"], n)],
                            dtype=object)
        if alias == "ids":
            return r.choice([3, 7, 11, 42, 0, -1, 99], (n, 3)).astype(np.int64)
        if alias == "num":
            return r.integers(-5, 50, (n, 1)).astype(np.int64)
        return None
    return {"style": "keras3",
            "description": "Keras lookup and hashing layers: text[?] -> tf.strings.split(maxsplit 4) -> "
                           "StringLookup (int, mask ''; multi_hot); ids[?,3] int64 -> IntegerLookup (int; "
                           "count); cat[?,1] string -> Hashing(16), Hashing(8, salt) (SipHash), "
                           "Hashing(5, mask_value ''); HashedCrossing(cat, num[?,1]) (32 bins; 6 bins "
                           "one_hot); " + _how_text("export") + ".",
            "inputs": {k: {"text": _sentences(4, rng, shape1=False),
                           "ids": np.array([[3, 7, 0], [42, 42, -1], [11, 5, 7], [3, 3, 3]], np.int64),
                           "cat": np.array([[b"red"], [b""], [b"blue"], [b"red"]], dtype=object),
                           "num": np.array([[1], [2], [-3], [1]], np.int64)} for k in ("serve", "serving_default")},
            "batch_inputs": batch}


def build_tf2_strings(model_dir):
    tf = _tf()
    import numpy as np

    class Strings(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="s"),
                                      tf.TensorSpec([], tf.string, name="pattern"),
                                      tf.TensorSpec([None], tf.float32, name="x")])
        def strings(self, s, pattern, x):
            words = tf.strings.split(s)
            first2 = tf.strings.split(s, sep=" ", maxsplit=2)
            cps = tf.strings.unicode_decode(s, "UTF-8", errors="replace")
            chars, offs = tf.strings.unicode_decode_with_offsets(s, "UTF-8")
            return {
                "groups": tf.strings.regex_replace(s, r"([a-z]+)([0-9]*)", r"<\2\1>"),
                "first_only": tf.strings.regex_replace(s, r"\s+", "_", replace_global=False),
                "dynamic": tf.strings.regex_replace(s, pattern, "#"),
                "full_match": tf.strings.regex_full_match(s, pattern),
                "words": words.to_tensor("<none>"),
                "first2": first2.to_tensor(""),
                "codepoints": cps.to_tensor(-1),
                "offsets": offs.to_tensor(-1),
                "upper_cps": tf.strings.unicode_encode(chars + tf.where(chars >= 97, -32, 0) *
                                                        tf.cast((chars >= 97) & (chars <= 122), tf.int32), "UTF-8"),
                "bigrams": tf.strings.ngrams(words, 2, separator="+", pad_values=("<s>", "</s>")).to_tensor(""),
                "as_string": tf.strings.as_string(x, precision=3),
                "as_string_sci": tf.strings.as_string(x, scientific=True, width=14, fill=" "),
                "as_string_int": tf.strings.as_string(tf.cast(x * 100.0, tf.int64), width=6, fill="0"),
                "joined": tf.strings.unsorted_segment_join(words.flat_values, words.value_rowids(),
                                                           tf.shape(s, out_type=tf.int64)[0], separator="|"),
                "ranges": tf.ragged.range(tf.strings.length(s, unit="UTF8_CHAR") % 5).to_tensor(-7),
            }

    m = Strings()
    tf.saved_model.save(m, model_dir, signatures={"serving_default": m.strings})
    s = np.array([b"abc12 de3 f", b"", "caf\u00e9 na\u00efve".encode(), b"x  y\tz", b"\xffbad\xc3"], dtype=object)
    return {"style": "tf2",
            "description": "tf.function over tf.strings and tf.ragged: regex_replace with groups "
                           "(global and first only), with a pattern fed at run time, regex_full_match, "
                           "split (whitespace; sep with maxsplit), unicode_decode (with offsets, "
                           "replacing ill-formed UTF-8), unicode_encode, ngrams with padding, as_string "
                           "(precision; scientific, width; int width fill 0), unsorted_segment_join, "
                           "ragged.range, to_tensor; tf.saved_model.save (TF %s)." % tf.__version__,
            "inputs": {"serving_default": {"s": s, "pattern": np.array(b"[a-z]+\\d*", dtype=object),
                                           "x": np.array([0.5, -1234.5678, 3e-5, 7.0, 1e10], np.float32)}},
            "batch_inputs": lambda key, alias, n, rng: (
                _sentences(n, rng, shape1=False) if alias == "s" else
                rng.standard_normal(n).astype(np.float32) * 100 if alias == "x" else None)}


def build_tftext_bert(model_dir):
    """TensorFlow Text's tokenizers (its custom ops: CaseFoldUTF8, NormalizeUTF8, RegexSplitWithOffsets,
    WordpieceTokenizeWithOffsets), as a BERT preprocessing export holds them."""
    tf = _tf()
    import numpy as np
    import os
    import tempfile
    import tensorflow_text as text
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "quick", "brown", "fox", "##es", "jump", "##ed", "over",
             "lazy", "dog", ".", ",", "!", "a", "##s", "hello", "world", "un", "##aff", "##able", "caf", "##e",
             "\u00e9", "##\u00e9", "\u65e5", "\u672c", "x", "##x", "##y", "zz"]
    vdir = tempfile.mkdtemp()
    vfile = os.path.join(vdir, "vocab.txt")
    with open(vfile, "w", encoding="utf-8") as f:
        f.write("\n".join(vocab) + "\n")

    class Bert(tf.Module):
        def __init__(self):
            self.bert = text.BertTokenizer(vfile, lower_case=True)
            self.bert_cased = text.BertTokenizer(vfile, lower_case=False, keep_whitespace=False)
            table = self.bert._wordpiece_tokenizer._vocab_lookup_table
            self.wp_long = text.WordpieceTokenizer(table, max_bytes_per_word=8, token_out_type=tf.string)
            self.wp_split = text.WordpieceTokenizer(table, split_unknown_characters=True, token_out_type=tf.string)
            self.wp_chars = text.WordpieceTokenizer(table, max_chars_per_token=3, unknown_token=None,
                                                    token_out_type=tf.string)
            self.wp_suffix = text.WordpieceTokenizer(table, suffix_indicator="", unknown_token="<?>",
                                                     token_out_type=tf.string)

    m = Bert()
    sig = [tf.TensorSpec([None], tf.string, name="x")]

    def bert(x):
        ids = m.bert.tokenize(x).merge_dims(-2, -1)
        cased = m.bert_cased.tokenize(x).merge_dims(-2, -1)
        return {"ids": ids.to_tensor(-1), "ids_cased": cased.to_tensor(-1)}

    def wordpiece(x):
        out = {}
        for name, wp in (("long", m.wp_long), ("split", m.wp_split), ("chars", m.wp_chars), ("suffix", m.wp_suffix)):
            toks, starts, ends = wp.tokenize_with_offsets(x)
            out[name] = toks.to_tensor("<none>")
            out[name + "_starts"] = starts.to_tensor(-1)
            out[name + "_ends"] = ends.to_tensor(-1)
        return out

    def norm(x):
        out = {f.lower(): text.normalize_utf8(x, f) for f in ("NFC", "NFD", "NFKC", "NFKD")}
        out["fold"] = text.case_fold_utf8(x)
        out["fold_2d"] = text.case_fold_utf8(tf.reshape(x, [-1, 1]))
        return out

    def split(x):
        toks, b, e = text.regex_split_with_offsets(x, r"\s|[,.!]", r"[,.!]")
        toks2, b2, e2 = text.regex_split_with_offsets(x, r"o+", "")
        return {"tokens": toks.to_tensor("<none>"), "begins": b.to_tensor(-1), "ends": e.to_tensor(-1),
                "tokens_o": toks2.to_tensor("<none>"), "begins_o": b2.to_tensor(-1), "ends_o": e2.to_tensor(-1)}

    from tensorflow_text.python.ops import whitespace_tokenizer as wst

    def tokenize(x):
        out = {}
        w, ws, we = text.WhitespaceTokenizer().tokenize_with_offsets(x)
        out.update(ws_tokens=w.to_tensor("<none>"), ws_starts=ws.to_tensor(-1), ws_ends=we.to_tensor(-1))
        for keep in (False, True):
            t, ts, te = text.UnicodeScriptTokenizer(keep_whitespace=keep).tokenize_with_offsets(x)
            k = "script_keep" if keep else "script"
            out.update({k: t.to_tensor("<none>"), k + "_starts": ts.to_tensor(-1), k + "_ends": te.to_tensor(-1)})
        cps = tf.strings.unicode_decode(x, "UTF-8")  # TF Text's first whitespace op, on code points
        v1 = wst.gen_whitespace_tokenizer.whitespace_tokenize_with_offsets(cps.flat_values, cps.row_splits)
        out.update(v1_values=v1[0], v1_inner=v1[1], v1_starts=v1[2], v1_limits=v1[3], v1_outer=v1[4])
        return out

    def pack(x):
        words = text.WhitespaceTokenizer().tokenize(x)
        halves = tf.strings.split(x, sep=",")
        out = {}
        for n in (0, 3, 5, 9, 40):
            a, b = text.RoundRobinTrimmer(max_seq_length=n).trim([words, halves.with_row_splits_dtype(tf.int64)])
            out["trim%d_a" % n] = a.to_tensor("<none>")
            out["trim%d_b" % n] = b.to_tensor("<none>")
        ids = tf.strings.length(words)  # int32 values: the trimmer takes any dtype
        c, d = text.RoundRobinTrimmer(max_seq_length=4).trim([ids, tf.strings.length(halves).with_row_splits_dtype(tf.int64)])
        out.update(trim_ids=c.to_tensor(-1), trim_lens=d.to_tensor(-1))
        out["bigrams"] = text.ngrams(words, 2, reduction_type=text.Reduction.STRING_JOIN, string_separator="_").to_tensor("")
        out["trigrams"] = text.ngrams(words, 3, reduction_type=text.Reduction.STRING_JOIN).to_tensor("")
        dense = tf.reshape(tf.strings.as_string(tf.range(12)), [2, 2, 3])
        out["dense_bigrams"] = text.ngrams(dense, 2, reduction_type=text.Reduction.STRING_JOIN, string_separator="+")
        return out

    sigs = {k: tf.function(f, input_signature=sig) for k, f in
            (("serving_default", bert), ("wordpiece", wordpiece), ("norm", norm), ("split", split),
             ("tokenize", tokenize), ("pack", pack))}
    tf.saved_model.save(m, model_dir, signatures=sigs)
    sentences = np.array([b"The quick brown foxes jumped over the lazy dog.", b"Hello, WORLD!",
                          "Caf\u00e9 unaffable \u65e5\u672c xxy zz.".encode(), b"", b"  spaced,,out  ",
                          "\u00c5\ufb01\uff21\u2460 Stra\u00dfe e\u0301\u3000\u65e5\u672cabc\u00a0x".encode(), b"bad\xff bytes\xc3 here\xed\xa0\x80",
                          b"foxesfoxesfoxes un##aff"], dtype=object)
    words = np.array([b"foxes", b"jumped", b"unaffable", b"xxyyx", b"qqq", b"", "caf\u00e9".encode(), b"zzzzzzzzz",
                      b"a\xffs", "\u65e5\u672c".encode(), b"thethe"], dtype=object)
    return {"style": "tf2",
            "description": "TensorFlow Text %s (its custom ops, as TF Serving links them): BertTokenizer with "
                           "lower_case (CaseFoldUTF8, NormalizeUTF8 NFD, accents stripped) and cased, over a "
                           "34-word vocabulary asset; WordpieceTokenizer with max_bytes_per_word 8, "
                           "split_unknown_characters, max_chars_per_token 3 without an unknown token, an empty "
                           "suffix_indicator; normalize_utf8 in the four forms and case_fold_utf8 (ill-formed "
                           "bytes copied); regex_split_with_offsets with a kept delimiter and without; "
                           "WhitespaceTokenizer (V2, its config bitmap), UnicodeScriptTokenizer with and without "
                           "keep_whitespace, the V1 WhitespaceTokenizeWithOffsets on code points; RoundRobinTrimmer.trim of two "
                           "segments at five lengths and of two int32 segments, ngrams with STRING_JOIN over "
                           "ragged words and a dense [2,2,3] tensor; "
                           "tf.saved_model.save (TF %s)." % (text.__version__, tf.__version__),
            "inputs": {"serving_default": {"x": sentences}, "norm": {"x": sentences}, "split": {"x": sentences},
                       "tokenize": {"x": sentences}, "pack": {"x": sentences},
                       "wordpiece": {"x": words}},
            "batch_inputs": lambda key, alias, n, rng: (
                words[rng.integers(0, len(words), n)] if key == "wordpiece" else
                sentences[rng.integers(0, len(sentences), n)])}


TEXT_BUILDERS = {
    "keras_text_vectorization": build_keras_text_vectorization,
    "keras_lookup_hashing": build_keras_lookup_hashing,
    "tf2_strings": build_tf2_strings,
    "tftext_bert": build_tftext_bert,
}
