/**
 * Writes a tiny sentence-embedding model folder, in the layout @xenova/transformers loads from a local models
 * directory, so the ONNX embedder can be tested without downloading anything (there is no network, and no Python).
 *
 * The "model" is a BERT-shaped graph without attention: each token's vector is a row of a fixed, pseudo-random
 * embedding table (plus a token-type row, all zeros), masked by attention_mask. After mean pooling, texts that share
 * words share rows and so get similar vectors; texts with no words in common get nearly unrelated ones.
 *
 * The ONNX protobuf is written by hand (a few dozen lines) rather than with protobufjs, which is only a transitive
 * dependency here.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const HIDDEN_SIZE = 32;
const SPECIAL_TOKENS = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'] as const;
const WORDS = `
  the a an and or but if of to in on at by for with from about as into over under after before between
  is are was were be been am do does did have has had will would can could should may might must
  i you he she it we they me him her us them my your his its our their this that these those what which who
  how why when where there here not no yes all any some each every many much more most other such only
  cat cats dog dogs bird fish horse cow mouse animal sat sit sits run runs ran jump jumps eat eats ate sleep
  mat chair table floor house home garden park street city town country river sea mountain tree
  capital france paris germany berlin italy rome spain madrid london england
  weather rain sun snow cold hot warm today tomorrow yesterday morning night week year
  code program array sort sorting javascript python function variable server database query cache
  quantum physics finance market stock price report bank money tax invoice budget
  music song piano guitar movie book read write letter email phone call meeting
  red blue green black white big small old new good bad fast slow happy sad
  tell give show find make get know think want need like please thanks hello
  ##s ##ing ##ed
`
  .trim()
  .split(/\s+/);

export const TINY_MODEL_VOCABULARY: readonly string[] = [...SPECIAL_TOKENS, ...WORDS];

/** Writes `<dir>/<name>/` with config.json, tokenizer.json, tokenizer_config.json and onnx/model.onnx. */
export function writeTinySentenceModel(dir: string, name: string): { dimensions: number } {
  const folder = join(dir, name);
  mkdirSync(join(folder, 'onnx'), { recursive: true });
  const vocabulary = TINY_MODEL_VOCABULARY;
  writeFileSync(join(folder, 'config.json'), JSON.stringify(modelConfig(vocabulary.length), null, 2));
  writeFileSync(join(folder, 'tokenizer.json'), JSON.stringify(tokenizerJson(vocabulary), null, 2));
  writeFileSync(join(folder, 'tokenizer_config.json'), JSON.stringify(tokenizerConfig(), null, 2));
  writeFileSync(join(folder, 'onnx', 'model.onnx'), onnxModel(embeddingTable(vocabulary), vocabulary.length));
  return { dimensions: HIDDEN_SIZE };
}

function modelConfig(vocabSize: number): object {
  return {
    architectures: ['BertModel'],
    model_type: 'bert',
    hidden_size: HIDDEN_SIZE,
    vocab_size: vocabSize,
    max_position_embeddings: 512,
    type_vocab_size: 2,
  };
}

function tokenizerConfig(): object {
  return {
    tokenizer_class: 'BertTokenizer',
    do_lower_case: true,
    model_max_length: 512,
    pad_token: '[PAD]',
    unk_token: '[UNK]',
    cls_token: '[CLS]',
    sep_token: '[SEP]',
    mask_token: '[MASK]',
  };
}

/** A Hugging Face `tokenizers` file for a lower-casing WordPiece (BERT uncased) tokenizer. */
function tokenizerJson(vocabulary: readonly string[]): object {
  const ids = Object.fromEntries(vocabulary.map((token, id) => [token, id]));
  const special = (token: string) => ({ SpecialToken: { id: token, type_id: 0 } });
  const sequence = (id: 'A' | 'B', typeId: number) => ({ Sequence: { id, type_id: typeId } });
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: SPECIAL_TOKENS.map((token) => ({
      id: ids[token],
      content: token,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    })),
    normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: {
      type: 'TemplateProcessing',
      single: [special('[CLS]'), sequence('A', 0), special('[SEP]')],
      pair: [special('[CLS]'), sequence('A', 0), special('[SEP]'), sequence('B', 1), special('[SEP]')],
      special_tokens: Object.fromEntries(
        ['[CLS]', '[SEP]'].map((token) => [token, { id: token, ids: [ids[token]], tokens: [token] }]),
      ),
    },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: { type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 100, vocab: ids },
  };
}

/**
 * One row per token. Words get pseudo-random rows from a fixed seed (so every run builds the same model); [CLS] and
 * [SEP] get a small shared row, so that even an empty text (just those two) has a non-zero vector to normalise.
 */
function embeddingTable(vocabulary: readonly string[]): Float32Array {
  const random = mulberry32(0x5eed);
  const table = new Float32Array(vocabulary.length * HIDDEN_SIZE);
  vocabulary.forEach((token, row) => {
    for (let column = 0; column < HIDDEN_SIZE; column++) {
      const value = token === '[PAD]' ? 0 : token === '[CLS]' || token === '[SEP]' ? 0.05 : random() * 2 - 1;
      table[row * HIDDEN_SIZE + column] = value;
    }
  });
  return table;
}

function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// ONNX enum values (onnx.proto): TensorProto.DataType and AttributeProto.AttributeType.
const FLOAT = 1;
const INT64 = 7;
const ATTRIBUTE_INT = 2;

/**
 * last_hidden_state = (Gather(word_embeddings, input_ids) + Gather(token_type_embeddings, token_type_ids))
 *                     * Unsqueeze(Cast(attention_mask), axis 2)
 */
function onnxModel(table: Float32Array, vocabSize: number): Buffer {
  const graph = new ProtoWriter();
  const node = (opType: string, inputs: string[], output: string, attributes: Record<string, number> = {}) =>
    graph.message(1, (n) => {
      for (const input of inputs) n.string(1, input);
      n.string(2, output);
      n.string(3, output);
      n.string(4, opType);
      for (const [name, value] of Object.entries(attributes)) {
        n.message(5, (a) => a.string(1, name).varint(3, value).varint(20, ATTRIBUTE_INT));
      }
    });
  node('Gather', ['word_embeddings', 'input_ids'], 'word_vectors', { axis: 0 });
  node('Gather', ['token_type_embeddings', 'token_type_ids'], 'type_vectors', { axis: 0 });
  node('Add', ['word_vectors', 'type_vectors'], 'token_vectors');
  node('Cast', ['attention_mask'], 'mask', { to: FLOAT });
  node('Unsqueeze', ['mask', 'hidden_axis'], 'mask_per_token');
  node('Mul', ['token_vectors', 'mask_per_token'], 'last_hidden_state');
  graph.string(2, 'tiny_sentence_model');
  graph.message(5, (t) => tensor(t, 'word_embeddings', FLOAT, [vocabSize, HIDDEN_SIZE], bytesOf(table)));
  graph.message(5, (t) => tensor(t, 'token_type_embeddings', FLOAT, [2, HIDDEN_SIZE], bytesOf(new Float32Array(2 * HIDDEN_SIZE))));
  graph.message(5, (t) => tensor(t, 'hidden_axis', INT64, [1], bytesOf(new BigInt64Array([2n]))));
  for (const input of ['input_ids', 'attention_mask', 'token_type_ids']) {
    graph.message(11, (v) => valueInfo(v, input, INT64, ['batch', 'sequence']));
  }
  graph.message(12, (v) => valueInfo(v, 'last_hidden_state', FLOAT, ['batch', 'sequence', HIDDEN_SIZE]));

  return new ProtoWriter()
    .varint(1, 8) // ir_version
    .string(2, 'tollgate-test')
    .message(7, (g) => g.raw(graph))
    .message(8, (o) => o.string(1, '').varint(2, 13)) // opset_import: default domain, opset 13
    .finish();
}

function tensor(writer: ProtoWriter, name: string, dataType: number, dims: number[], raw: Uint8Array): void {
  for (const dim of dims) writer.varint(1, dim);
  writer.varint(2, dataType).string(8, name).bytes(9, raw);
}

function valueInfo(writer: ProtoWriter, name: string, elemType: number, dims: (number | string)[]): void {
  writer.string(1, name).message(2, (type) =>
    type.message(1, (tensorType) =>
      tensorType.varint(1, elemType).message(2, (shape) => {
        for (const dim of dims) shape.message(1, (d) => (typeof dim === 'number' ? d.varint(1, dim) : d.string(2, dim)));
      }),
    ),
  );
}

/** Little-endian bytes, as ONNX raw_data wants (every platform Node runs the tests on is little-endian). */
function bytesOf(values: Float32Array | BigInt64Array): Uint8Array {
  return new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
}

/** Just enough of the protobuf wire format for ONNX: varints, length-delimited bytes/strings and nested messages. */
class ProtoWriter {
  private readonly chunks: Uint8Array[] = [];

  varint(field: number, value: number): this {
    this.key(field, 0);
    this.pushVarint(value);
    return this;
  }

  bytes(field: number, data: Uint8Array): this {
    this.key(field, 2);
    this.pushVarint(data.byteLength);
    this.chunks.push(data);
    return this;
  }

  string(field: number, text: string): this {
    return this.bytes(field, Buffer.from(text, 'utf8'));
  }

  message(field: number, build: (writer: ProtoWriter) => void): this {
    const nested = new ProtoWriter();
    build(nested);
    return this.bytes(field, nested.finish());
  }

  /** Appends another writer's fields as they are (to fill a message built elsewhere). */
  raw(other: ProtoWriter): this {
    this.chunks.push(other.finish());
    return this;
  }

  finish(): Buffer {
    return Buffer.concat(this.chunks);
  }

  private key(field: number, wireType: number): void {
    this.pushVarint(field * 8 + wireType);
  }

  private pushVarint(value: number): void {
    if (!Number.isSafeInteger(value) || value < 0) throw new Error(`varint out of range: ${value}`);
    const bytes: number[] = [];
    let rest = value;
    while (rest >= 0x80) {
      bytes.push((rest % 0x80) | 0x80);
      rest = Math.floor(rest / 0x80);
    }
    bytes.push(rest);
    this.chunks.push(Uint8Array.from(bytes));
  }
}
