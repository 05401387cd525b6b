// bench/peers/ort_heads.js — ONNX Runtime's attention on many heads, timed on its CPU provider.
//
//   NODE_PATH=<folder>/node_modules node bench/peers/ort_heads.js --op mha|gqa|attention --threads 2 --min-time 0.5 \
//       --heads 32 [--keys S] L:E:H_kv:causal
//
// One case per process (bench/peers/heads_peers.py and decode_peers.py start it, install the packages
// and measure the process's peak memory). S = L unless --keys gives it (decoding: L = 1). The model
// is one node, written here with onnx-proto:
//   mha: MultiHeadAttention, num_heads = H, q (1, L, H·E), k and v (1, S, H·E); causal is its
//        unidirectional = 1. It has no grouped key/value heads: a case with H_kv < H is skipped.
//   gqa: GroupQueryAttention, num_heads = H and kv_num_heads = H_kv, q (1, L, H·E). S = L: k and v
//        (1, S, H_kv·E), no past cache (seqlens_k = S − 1, total_sequence_length = S): a prompt.
//        S > L: decoding, k and v the last L tokens (1, L, H_kv·E) and past_key, past_value
//        (1, H_kv, S, E) the whole cache, fed again as present_key and present_value's buffers
//        (past and present share one buffer, as a generator does; the new tokens are written over
//        themselves), seqlens_k = S − 1, total_sequence_length = S.
//   attention: ONNX's own Attention (opset 23), q (1, H, L, E), k and v (1, H_kv, S, E), is_causal:
//        the layout of attention/heads.hpp, grouped heads causal or not.
// A provider that refuses the node is reported as skipped, with its message.
// Inputs are in the operator's own layout, filled by heads_peers.py's formula in
// the canonical (head, token, width) order, so the checksum compares engines whatever the layout.
// Printed: one JSON line {engine, case, calls, seconds (mean per call), checksum} or {…, skipped}.
"use strict";
const ort = require("onnxruntime-node");
const { onnx } = require("onnx-proto");

function parseArgs(argv) {
    const args = { op: "mha", threads: 2, minTime: 0.5, heads: 32, keys: 0, case: null };
    for (let i = 0; i < argv.length; i++) {
        const next = () => argv[++i];
        if (argv[i] === "--op") args.op = next();
        else if (argv[i] === "--threads") args.threads = Number(next());
        else if (argv[i] === "--min-time") args.minTime = Number(next());
        else if (argv[i] === "--heads") args.heads = Number(next());
        else if (argv[i] === "--keys") args.keys = Number(next());
        else args.case = argv[i];
    }
    const [L, E, kvHeads, causal] = args.case.split(":").map(Number);
    return { ...args, L, S: args.keys || L, E, kvHeads, causal: causal === 1 };
}

// heads_peers.py's input formula: value t (0 = Q, 1 = K, 2 = V) at canonical index i.
function inputValue(t, i) {
    return (((i + 1) * 0.6180339887498949 + t * 0.1) % 1) * 2 - 1;
}

// A (1, tokens, heads·width) tensor whose element (token n, head h, column e) holds the canonical
// (h, first + n, e) value of an operand of `total` tokens a head.
function tokensFirst(t, heads, tokens, width, first = 0, total = tokens) {
    const data = new Float32Array(heads * tokens * width);
    for (let h = 0; h < heads; h++)
        for (let n = 0; n < tokens; n++)
            for (let e = 0; e < width; e++)
                data[(n * heads + h) * width + e] = inputValue(t, (h * total + first + n) * width + e);
    return new ort.Tensor("float32", data, [1, tokens, heads * width]);
}

// heads_peers.py's checksum: Σ O[h, n, e] · ((31·h + 7·n + e) mod 13 − 6), read from (1, L, H·E), or
// from (1, H, L, E) when headsOuter.
function checksum(output, heads, tokens, width, headsOuter) {
    let sum = 0;
    for (let h = 0; h < heads; h++)
        for (let n = 0; n < tokens; n++)
            for (let e = 0; e < width; e++) {
                const at = headsOuter ? (h * tokens + n) * width + e : (n * heads + h) * width + e;
                sum += output[at] * (((31 * h + 7 * n + e) % 13) - 6);
            }
    return sum;
}

// A (1, heads, tokens, width) tensor, the canonical order itself.
function headsFirst(t, heads, tokens, width) {
    const data = new Float32Array(heads * tokens * width).map((_, i) => inputValue(t, i));
    return new ort.Tensor("float32", data, [1, heads, tokens, width]);
}

function valueInfo(name, elemType, dims) {
    return { name, type: { tensorType: { elemType, shape: { dim: dims.map((d) => ({ dimValue: d })) } } } };
}

function intAttribute(name, value) {
    return { name, type: onnx.AttributeProto.AttributeType.INT, i: value };
}

const FLOAT = onnx.TensorProto.DataType.FLOAT, INT32 = onnx.TensorProto.DataType.INT32;

// Each operator's node, its inputs and feeds, and the output's shape.
const OPERATORS = {
    mha: (a) => ({
        node: {
            opType: "MultiHeadAttention",
            domain: "com.microsoft",
            attribute: [intAttribute("num_heads", a.heads), intAttribute("unidirectional", a.causal ? 1 : 0)],
        },
        feeds: tokensFirstFeeds(a, a.heads),
        output: [1, a.L, a.heads * a.E],
    }),
    gqa: (a) => ({
        node: {
            opType: "GroupQueryAttention",
            domain: "com.microsoft",
            attribute: [intAttribute("num_heads", a.heads), intAttribute("kv_num_heads", a.kvHeads)],
            extraOutputs: ["present_key", "present_value"],
        },
        feeds: {
            query: tokensFirst(0, a.heads, a.L, a.E),
            key: tokensFirst(1, a.kvHeads, a.L, a.E, a.S - a.L, a.S),
            value: tokensFirst(2, a.kvHeads, a.L, a.E, a.S - a.L, a.S),
            past_key: a.S > a.L ? headsFirst(1, a.kvHeads, a.S, a.E) : null,
            past_value: a.S > a.L ? headsFirst(2, a.kvHeads, a.S, a.E) : null,
            seqlens_k: new ort.Tensor("int32", Int32Array.from([a.S - 1]), [1]),
            total_sequence_length: new ort.Tensor("int32", Int32Array.from([a.S]), []),
        },
        output: [1, a.L, a.heads * a.E],
    }),
    attention: (a) => ({
        node: { opType: "Attention", domain: "", attribute: [intAttribute("is_causal", a.causal ? 1 : 0)] },
        feeds: {
            query: headsFirst(0, a.heads, a.L, a.E),
            key: headsFirst(1, a.kvHeads, a.S, a.E),
            value: headsFirst(2, a.kvHeads, a.S, a.E),
        },
        output: [1, a.heads, a.L, a.E],
    }),
};

function tokensFirstFeeds(a, kvHeads) {
    return {
        query: tokensFirst(0, a.heads, a.L, a.E),
        key: tokensFirst(1, kvHeads, a.S, a.E),
        value: tokensFirst(2, kvHeads, a.S, a.E),
    };
}

// GroupQueryAttention's present_key and present_value, outputs of the model when it decodes over a past
// cache (their buffers are the past's): shaped as the past.
function pastOutputs(feeds) {
    if (!feeds.past_key) return [];
    return ["present_key", "present_value"].map((name) => valueInfo(name, FLOAT, feeds.past_key.dims));
}

// The one-node model of the case (null feeds: an optional input left out), and the feeds it runs on.
function build(a) {
    const { node, feeds, output } = OPERATORS[a.op](a);
    const names = Object.keys(feeds);
    const given = names.filter((name) => feeds[name] !== null);
    const scale = { name: "scale", type: onnx.AttributeProto.AttributeType.FLOAT, f: 1 / Math.sqrt(a.E) };
    const model = onnx.ModelProto.create({
        irVersion: 10,
        opsetImport: [
            { domain: "", version: 23 },
            { domain: "com.microsoft", version: 1 },
        ],
        graph: {
            name: "heads",
            node: [
                {
                    opType: node.opType,
                    domain: node.domain,
                    input: names.map((name) => (feeds[name] === null ? "" : name)),
                    output: ["output", ...(node.extraOutputs || [])],
                    attribute: [...node.attribute, scale],
                },
            ],
            input: given.map((name) => valueInfo(name, feeds[name].type === "int32" ? INT32 : FLOAT, feeds[name].dims)),
            output: [valueInfo("output", FLOAT, output), ...pastOutputs(feeds)],
        },
    });
    return { bytes: onnx.ModelProto.encode(model).finish(), feeds: Object.fromEntries(given.map((n) => [n, feeds[n]])) };
}

// Why this operator cannot run the case as asked, or null.
function unsupported(a) {
    if (a.op === "mha" && a.kvHeads !== a.heads) return "MultiHeadAttention has no grouped key/value heads";
    // One query row over a past cache sees every key, causal or not.
    if (a.op === "gqa" && !a.causal && a.L > 1) return "GroupQueryAttention is causal only (a prompt over its own keys)";
    if (a.op === "gqa" && a.causal && a.S !== a.L)
        return "GroupQueryAttention aligns its causal rows with the cache's end, not top left";
    return null;
}

async function main() {
    const a = parseArgs(process.argv.slice(2));
    const engine = "ort_" + a.op;
    const reason = unsupported(a);
    if (reason) return console.log(JSON.stringify({ engine, case: a.case, skipped: reason }));
    const { bytes, feeds } = build(a);
    let model;
    try {
        model = await ort.InferenceSession.create(bytes, {
            intraOpNumThreads: a.threads,
            interOpNumThreads: 1,
            executionMode: "sequential",
        });
    } catch (error) {
        return console.log(JSON.stringify({ engine, case: a.case, skipped: String(error.message || error) }));
    }
    // Decoding with GroupQueryAttention: present_key and present_value are written into the past's buffers.
    const shared = feeds.past_key ? { present_key: feeds.past_key, present_value: feeds.past_value } : null;
    const fetches = shared ? { output: null, ...shared } : undefined;
    const first = await model.run(feeds, fetches);  // untimed: the first run allocates and plans
    const sum = checksum(first.output.data, a.heads, a.L, a.E, a.op === "attention");
    let calls = 0;
    const start = process.hrtime.bigint();
    let seconds = 0;
    while (calls === 0 || seconds < a.minTime) {
        await model.run(feeds, fetches);
        calls++;
        seconds = Number(process.hrtime.bigint() - start) / 1e9;
    }
    console.log(JSON.stringify({ engine, case: a.case, calls, seconds: seconds / calls, checksum: sum }));
}

main().catch((error) => {
    console.error("ort_heads: " + (error.stack || error));
    process.exit(1);
});
