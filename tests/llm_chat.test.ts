// Chat (src/llm/chat_template.ts, src/llm/chat.ts, src/cli/chat.ts): the models' chat templates
// rendered by @huggingface/jinja against Python's jinja2 as transformers sets it up
// (tests/fixtures/llm/chat_templates.json, written by tests/fixtures/llm/chat_fixture.py), the
// typed errors (no template, one that does not parse or render, raise_exception), and a
// ChatSession on SmolLM2 135M Instruct: turn 2 evaluates only what the KV cache does not hold,
// with the logits of a cold start of the same tokens; a stopped reply stays in the history; the
// CLI with its input piped (`wsp-ggml chat`, and `generate --chat`), greedy.
//
// The model is fetched on first use (tests/llm_model.ts; WSP_GGML_FETCH_MODELS=0 to stay offline).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { GgufType, GgufWriter, readGguf } from "../mod.ts";
import { ChatSession, chatPrompt } from "../src/llm/chat.ts";
import { ChatTemplate, ChatTemplateError, ChatTemplateMissingError, ChatTemplateRaiseError, strftime } from "../src/llm/chat_template.ts";
import { defaultCacheDir, MODELS } from "../src/llm/fetch.ts";
import { commonPrefixLength } from "../src/llm/generate.ts";
import { LlmModel } from "../src/llm/model.ts";
import { Tokenizer } from "../src/llm/tokenizer.ts";
import { llmModel } from "./llm_model.ts";
import { root, runtimeArgs } from "./run.ts";

const THREADS = 1; // the test machines are small and shared: one thread is the steadiest
const BIN = join(root, "src", "cli", "bin.ts");
const tmp = mkdtempSync(join(tmpdir(), "wsp-chat-"));
process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));

interface Case { template: string; name: string; messages: { role: string; content: string }[]; add_generation_prompt: boolean; tools?: unknown[]; text: string }
interface Fixture { jinja2: string; templates: Record<string, { source: string; bos_token: string; eos_token: string; file: string; sha256: string }>; cases: Case[] }
const fixture = JSON.parse(readFileSync(join(root, "tests", "fixtures", "llm", "chat_templates.json"), "utf8")) as Fixture;
const CATALOG: Record<string, keyof typeof MODELS> = { smollm2: "smollm2-135m-instruct", "qwen2.5-coder": "qwen2.5-coder-0.5b-instruct" };

const smol = await llmModel("smollm2-135m-instruct");
const skip = smol.skip;
if (skip) console.warn(`skipping the chat session tests: ${skip}`);

for (const c of fixture.cases) {
  test(`template ${c.template}, "${c.name}": @huggingface/jinja renders what Python's jinja2 ${fixture.jinja2} does`, () => {
    const t = fixture.templates[c.template];
    const template = new ChatTemplate(t.source, { bosToken: t.bos_token, eosToken: t.eos_token });
    assert.equal(template.render(c.messages, { addGenerationPrompt: c.add_generation_prompt, tools: c.tools }), c.text);
  });
}

test("the fixture's templates are the model files' tokenizer.chat_template, with their BOS / EOS text", () => {
  for (const [name, t] of Object.entries(fixture.templates)) {
    const id = CATALOG[name];
    const path = join(defaultCacheDir(process.env, id), MODELS[id].file);
    // Only a file already there (the Qwen file is 491 MB: not fetched for this check).
    if (!existsSync(path)) {
      console.log(`# ${name}: ${path} is not cached; the fixture's copy of its template is used as it is`);
      continue;
    }
    const template = ChatTemplate.fromGguf(readGguf(path));
    assert.equal(template.source, t.source, name);
    assert.deepEqual(template.specialTokens, { bosToken: t.bos_token, eosToken: t.eos_token }, name);
  }
});

/** A GGUF with a vocabulary of four tokens and, when given, a chat template (metadata only). */
function tinyGguf(name: string, template?: string): string {
  const path = join(tmp, name);
  using w = new GgufWriter();
  w.setArray("tokenizer.ggml.tokens", GgufType.STRING, ["<unk>", "<s>", "</s>", "a"]);
  w.set("tokenizer.ggml.bos_token_id", GgufType.UINT32, 1);
  w.set("tokenizer.ggml.eos_token_id", GgufType.UINT32, 2);
  if (template !== undefined) w.set("tokenizer.chat_template", GgufType.STRING, template);
  w.write(path);
  return path;
}

test("errors: no template (a typed error that says to pass one), one that does not parse or render, raise_exception", () => {
  const bare = readGguf(tinyGguf("bare.gguf"));
  assert.throws(() => ChatTemplate.fromGguf(bare), (e: unknown) => e instanceof ChatTemplateMissingError && e instanceof ChatTemplateError && /pass a template/.test(e.message) && /--template/.test(e.message));
  // A template given overrides the file's (or its absence); bos_token / eos_token still come from the file.
  const given = ChatTemplate.fromGguf(bare, "{{ bos_token }}{{ messages[0].content }}{{ eos_token }}");
  assert.equal(given.render([{ role: "user", content: "hi" }]), "<s>hi</s>");
  const own = readGguf(tinyGguf("own.gguf", "[{{ messages | length }}]"));
  assert.equal(ChatTemplate.fromGguf(own).render([{ role: "user", content: "x" }]), "[1]");
  assert.equal(ChatTemplate.fromGguf(own, "override").render([]), "override");

  assert.throws(() => new ChatTemplate("{% if %}"), (e: unknown) => e instanceof ChatTemplateError && /does not parse: Unexpected token/.test(e.message));
  assert.throws(() => new ChatTemplate("{% for m in messages %}"), ChatTemplateError);
  const unknownFilter = new ChatTemplate("{{ messages | no_such_filter }}");
  assert.throws(() => unknownFilter.render([]), (e: unknown) => e instanceof ChatTemplateError && !(e instanceof ChatTemplateRaiseError) && /failed to render: .*no_such_filter/.test(e.message));

  // The pattern of many templates: refuse roles out of order.
  const strict = new ChatTemplate("{% for m in messages %}{% if (m.role == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{{ m.content }};{% endfor %}");
  assert.equal(strict.render([{ role: "user", content: "a" }, { role: "assistant", content: "b" }]), "a;b;");
  assert.throws(() => strict.render([{ role: "assistant", content: "a" }]), (e: unknown) =>
    e instanceof ChatTemplateRaiseError && e instanceof ChatTemplateError && e.templateMessage === "Conversation roles must alternate user/assistant/user/assistant/..." && /raise_exception: Conversation roles/.test(e.message));
});

const gemma = await llmModel("gemma3-270m");

test("chatPrompt: where the model adds BOS, one BOS whether the template writes bos_token or not (llama.cpp's chat)", { skip: gemma.skip || false }, () => {
  const file = readGguf(gemma.path);
  const tok = Tokenizer.fromGguf(file); // SentencePiece, add_bos_token true
  assert.equal(tok.addBos, true);
  const turns = "{% for m in messages %}<start_of_turn>{{ m.role }}\n{{ m.content }}<end_of_turn>\n{% endfor %}";
  const msgs = [{ role: "user", content: "Hi there" }];
  const withBos = chatPrompt(tok, ChatTemplate.fromGguf(file, `{{ bos_token }}${turns}`), msgs);
  const without = chatPrompt(tok, ChatTemplate.fromGguf(file, turns), msgs);
  assert.equal(withBos.text, without.text, "the BOS text is dropped, BOS is added as a token");
  assert.deepEqual(withBos.ids, without.ids);
  assert.equal(withBos.ids[0], tok.bos);
  assert.equal(withBos.ids.filter((i) => i === tok.bos).length, 1, "one BOS");
  assert.deepEqual(withBos.ids, tok.encode(without.text, { parseSpecial: true }));
  // A BOS written later in the text (not at its start) stays there as text the tokenizer parses.
  const twice = chatPrompt(tok, ChatTemplate.fromGguf(file, `{{ bos_token }}${turns}{{ bos_token }}`), msgs);
  assert.equal(twice.ids.filter((i) => i === tok.bos).length, 2);
});

test("what templates read besides messages: tools and documents None, add_generation_prompt, strftime_now, range, extra variables", () => {
  const t = new ChatTemplate("{% if tools is none %}T{% endif %}{% if documents is none %}D{% endif %}{% if not add_generation_prompt %}G{% endif %} {{ range(3) | join(',') }} {{ range(5, 1, -2) | join(',') }} {{ custom }}");
  assert.equal(t.render([], { variables: { custom: "yes" } }), "TDG 0,1,2 5,3 yes");
  assert.equal(new ChatTemplate("{% if tools %}{{ tools | length }}{% endif %}").render([], { tools: [{}, {}] }), "2");
  // strftime: Python's directives in the C locale, hand-derived (5 Jan 2024 was a Friday, day 5 of the year).
  assert.equal(strftime(new Date(2024, 0, 5, 13, 4, 9), "%d %b %Y %H:%M:%S %a %A %B %I%p %j %y %m %%"), "05 Jan 2024 13:04:09 Fri Friday January 01PM 005 24 01 %");
  const now = new Date();
  assert.match(new ChatTemplate("{{ strftime_now('%Y') }}").render([]), new RegExp(`^(${now.getFullYear()}|${now.getFullYear() + 1})$`));
});

/** ‖a − b‖∞ / ‖b‖∞. */
function relDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  assert.equal(a.length, b.length);
  let d = 0, m = 0;
  for (let i = 0; i < b.length; i++) {
    d = Math.max(d, Math.abs(a[i] - b[i]));
    m = Math.max(m, Math.abs(b[i]));
  }
  return d / m;
}

/** The text of a turn, its pieces' ids. */
async function reply(turn: AsyncIterable<{ id: number; text: string }>): Promise<{ text: string; ids: number[] }> {
  let text = "";
  const ids: number[] = [];
  for await (const p of turn) {
    text += p.text;
    if (p.id >= 0) ids.push(p.id);
  }
  return { text, ids };
}

const SYSTEM = "You are a terse assistant.";
const Q1 = "What is the capital of France?";
const Q2 = "And of Italy?";

// Dequantized (f32 weights and cache): a batch and a one-token step then sum in different orders
// only (measured ~1e-6 relative); with the quantized weights the q8 quantization of the
// activations spreads that to ~1e-2 (tests/llm.test.ts), which would hide a wrong cache row.
test("session: turn 2 evaluates only the tokens after the cached prefix, with a cold start's logits (≤ 1e-4 relative)", { skip }, async () => {
  using model = LlmModel.load(smol.path, { threads: THREADS, nCtx: 512, dequantize: true });
  const tokenizer = Tokenizer.load(smol.path);
  const chat = new ChatSession(model, tokenizer, { system: SYSTEM, temperature: 0, maxTokens: 24 });
  const r1 = await reply(chat.send(Q1));
  const s1 = chat.lastStats!;
  assert.equal(s1.reusedTokens, 0);
  assert.equal(s1.promptTokens, s1.conversationTokens);
  assert.equal(s1.stop, "eos", `turn 1 ends on <|im_end|>: ${JSON.stringify(r1.text)}`);
  assert.ok(!r1.text.includes("<|im_end|>") && r1.ids.every((id) => !tokenizer.isEog(id)), "the stopping token is not shown");
  const cached = [...chat.cachedTokens];
  assert.equal(cached.length, model.nPast);
  assert.deepEqual(cached, [...chatPrompt(tokenizer, chat.template, [{ role: "system", content: SYSTEM }, { role: "user", content: Q1 }]).ids, ...r1.ids]);

  // Turn 2, its prompt's logits recorded.
  const calls: Float32Array[] = [];
  const forward = model.forward.bind(model);
  model.forward = (tokens, options) => {
    const r = forward(tokens, options);
    calls.push(r.slice());
    return r;
  };
  const turn = chat.send(Q2, { maxTokens: 1 });
  await reply(turn);
  delete (model as { forward?: unknown }).forward; // the prototype's again
  const s = turn.stats;
  const prefix = commonPrefixLength(cached, turn.promptIds);
  console.log(`turn 2: ${s.promptTokens} of ${s.conversationTokens} tokens evaluated, ${s.reusedTokens} reused (the cache held ${cached.length}); TTFT ${s.ttftMs.toFixed(0)} ms`);
  assert.ok(s.promptTokens < s.conversationTokens, "turn 2 evaluates fewer tokens than the conversation has");
  assert.equal(s.reusedTokens + s.promptTokens, s.conversationTokens);
  assert.equal(s.reusedTokens, prefix);
  assert.equal(prefix, cached.length, "the template renders the reply as the same tokens here: everything cached is reused");
  assert.equal(calls[0].length, model.hparams.nVocab);

  model.reset();
  const cold = forward(turn.promptIds);
  const rel = relDiff(calls[0], cold);
  model.reset();
  const shifted = forward(turn.promptIds.slice(0, -1)); // the position before: what a cache off by one would give
  const apart = relDiff(shifted, cold);
  console.log(`turn-2 logits vs a cold start: ${rel.toExponential(2)} relative; the previous position's ${apart.toExponential(2)}`);
  assert.ok(rel <= 1e-4, `reused-cache logits differ from a cold start by ${rel}`);
  assert.ok(apart > 100 * 1e-4, "the check tells positions apart");
  assert.deepEqual(chat.messages.map((m) => m.role), ["system", "user", "assistant", "user", "assistant"]);
  assert.equal(chat.messages[2].content, r1.text);
  assert.deepEqual(chat.history, chat.messages);
});

test("session: a stopped reply stays in the history as shown and in the cache; the next turn goes on from it; reset()", { skip }, async () => {
  using model = LlmModel.load(smol.path, { threads: THREADS, nCtx: 1024 });
  const tokenizer = Tokenizer.load(smol.path);
  const chat = new ChatSession(model, tokenizer, { temperature: 0, maxTokens: 300 });
  const ac = new AbortController();
  const turn = chat.send("Write a long poem about the sea.", { signal: ac.signal });
  let shown = "", pieces = 0;
  await assert.rejects(async () => {
    for await (const p of turn) {
      shown += p.text;
      if (++pieces === 5) ac.abort();
    }
  }, (e: unknown) => (e as Error).name === "AbortError");
  assert.equal(pieces, 5, "no piece after the abort");
  assert.equal(turn.stats.stop, "abort");
  assert.equal(chat.busy, false);
  const last = chat.messages.at(-1)!;
  assert.deepEqual(last, { role: "assistant", content: shown });
  assert.equal(chat.cachedTokens.length, model.nPast);
  // Leaving the loop early stops the reply the same way.
  const next = chat.send("Shorter, please.", { maxTokens: 40 });
  let brief = "";
  for await (const p of next) {
    brief += p.text;
    if (brief.length > 0) break;
  }
  assert.ok(next.stats.reusedTokens > 0 && next.stats.reusedTokens >= turn.promptIds.length, `the stopped turn's tokens are reused: ${next.stats.reusedTokens}`);
  assert.deepEqual(chat.messages.map((m) => m.role), ["user", "assistant", "user", "assistant"]);
  assert.equal(chat.messages[3].content, brief);

  // One turn at a time; a turn made before the conversation changed is refused.
  const a = chat.send("One?", { maxTokens: 2 });
  const b = chat.send("Two?", { maxTokens: 2 });
  const it = a[Symbol.asyncIterator]();
  await it.next();
  assert.throws(() => chat.send("Three?"), /a reply is in progress/);
  assert.throws(() => chat.reset(), /a reply is in progress/);
  while (!(await it.next()).done);
  await assert.rejects(b.next(), /the conversation changed since send\(\)/);
  assert.equal(chat.messages.length, 6);

  chat.reset();
  assert.deepEqual(chat.messages, []);
  assert.equal(model.nPast, 0);
  const fresh = chat.send("Hi");
  await reply(fresh);
  assert.equal(fresh.stats.reusedTokens, 0);
});

test("session: a conversation longer than the context is a RangeError; a template given replaces the file's", { skip }, async () => {
  using model = LlmModel.load(smol.path, { threads: THREADS, nCtx: 64 });
  const tokenizer = Tokenizer.load(smol.path);
  const chat = new ChatSession(model, tokenizer, { temperature: 0 });
  assert.throws(() => chat.send("word ".repeat(80)), (e: unknown) => e instanceof RangeError && /context holds 64/.test(e.message));
  assert.deepEqual(chat.messages, [], "nothing joined the history");
  // A user-given template instead of the file's (bos_token / eos_token from the file).
  const plain = new ChatSession(model, tokenizer, { template: "{% for m in messages %}{{ m.content }}{{ eos_token }}{% endfor %}", maxTokens: 1 });
  const t = plain.send("x");
  assert.equal(t.prompt, "x<|im_end|>");
});

/** Runs `wsp-ggml ARGS` on this runtime with `input` on its (piped) stdin. */
function cliPiped(args: string[], input: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, runtimeArgs(BIN, args), { cwd: root, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "", stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), 180_000);
    child.on("error", reject);
    child.on("close", (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
    child.stdin.end(input);
  });
}

test("CLI: `chat` with piped input (the default model, greedy): two lines in, the session's two replies out, exit 0", { skip }, async () => {
  const lines = [Q1, Q2];
  // The same conversation in this process, as the reference.
  using model = LlmModel.load(smol.path, { threads: THREADS });
  const tokenizer = Tokenizer.load(smol.path);
  const chat = new ChatSession(model, tokenizer, { system: SYSTEM, temperature: 0, maxTokens: 32 });
  const want: string[] = [];
  for (const l of lines) want.push((await reply(chat.send(l))).text);
  const r = await cliPiped(["chat", "--system", SYSTEM, "--temp", "0", "--max-tokens", "32", "--threads", String(THREADS), "--stats"], lines.join("\n") + "\n");
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, want.map((t) => `${t}\n`).join(""));
  assert.match(r.stderr, new RegExp(MODELS["smollm2-135m-instruct"].file.replace(/\./g, "\\.")), "without --model: the catalog's chat model");
  const stats = [...r.stderr.matchAll(/prompt: (\d+) tokens evaluated, (\d+) reused from the cache \(of (\d+)\)/g)].map((m) => m.slice(1).map(Number));
  assert.equal(stats.length, 2, r.stderr);
  assert.equal(stats[0][1], 0);
  assert.ok(stats[1][1] > 0 && stats[1][0] < stats[1][2], `turn 2 reuses the cache: ${stats[1]}`);
});

test("CLI: `generate --chat` renders the prompt as one user message (with --system); `chat` without a template fails early", { skip }, async () => {
  using model = LlmModel.load(smol.path, { threads: THREADS });
  const tokenizer = Tokenizer.load(smol.path);
  const chat = new ChatSession(model, tokenizer, { system: SYSTEM, temperature: 0, maxTokens: 16 });
  const turn = chat.send(Q1);
  const want = await reply(turn);
  const r = await cliPiped(["generate", "--chat", "--model", smol.path, "--system", SYSTEM, "--prompt", Q1, "--temp", "0", "--n", "16", "--threads", String(THREADS), "--json"], "");
  assert.equal(r.status, 0, r.stderr);
  const d = JSON.parse(r.stdout) as { promptIds: number[]; ids: number[]; text: string; chatPrompt: string };
  assert.equal(d.chatPrompt, turn.prompt);
  assert.deepEqual(d.promptIds, turn.promptIds);
  assert.deepEqual(d.ids, want.ids);
  assert.equal(d.text, want.text);
  const usage = await cliPiped(["generate", "--prompt", "x", "--system", "s"], "");
  assert.equal(usage.status, 2);
  assert.match(usage.stderr, /--system needs --chat/);
  const bare = tinyGguf("cli-bare.gguf");
  const none = await cliPiped(["chat", "--model", bare], "hi\n");
  assert.equal(none.status, 1);
  assert.match(none.stderr, /ChatTemplateMissingError: .*--template FILE/);
});
