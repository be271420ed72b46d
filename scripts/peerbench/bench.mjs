// The peer of `bot bench -mode agent -redis`: the OpenAI Agents SDK (JS),
// pinned in package.json, doing what the issue "Cost that does not grow
// with history" compares hitlbot with — one approval-paused run, its state
// saved in Redis, read back, approved and resumed to its answer.
//
// Each of N conversations (C at once): run the agent on a message; the
// scripted model (in process, as bot bench's is: no HTTP) asks for one call
// of the tool `erase`, which needs approval, so the run stops with an
// interruption; the run's state is serialised (RunState.toString) and SET
// in Redis with an expiry, then GET back and restored (RunState.fromString)
// as another process would, the interruption approved, and the run resumed:
// the tool runs (a counter that must reach N) and the model answers "done".
//
// It prints one JSON object with bot bench's field names, so that
// scripts/measure.sh puts it in docs/measured.md beside hitlbot's rows:
// conversations per second, p50 and p99 of the decision-to-answer step (from
// reading the state back to the resumed run's answer), the process's CPU
// per conversation, Redis's CPU per conversation (INFO cpu before and
// after), and its Redis round trips (a SET and a GET).
//
// Usage: node bench.mjs -n 2000 -c 100 -redis redis://127.0.0.1:6379/0
import { Agent, Runner, RunState, Usage, tool } from '@openai/agents';
import { createClient } from 'redis';
import { z } from 'zod';

function flags(argv) {
  const f = { n: 2000, c: 100, redis: 'redis://127.0.0.1:6379/0' };
  for (let i = 0; i < argv.length; i += 2) {
    const k = argv[i].replace(/^-+/, '');
    const v = argv[i + 1];
    if (!(k in f) || v === undefined) {
      throw new Error(`usage: node bench.mjs [-n N] [-c C] [-redis URL] (bad flag ${argv[i]})`);
    }
    f[k] = k === 'redis' ? v : Number.parseInt(v, 10);
    if (k !== 'redis' && !(f[k] > 0)) throw new Error(`-${k} must be a positive integer`);
  }
  return f;
}

// The scripted model: the first turn asks for erase, the one after the
// tool's result answers "done" — the script bot bench's model follows.
const model = {
  async getResponse(req) {
    const items = Array.isArray(req.input) ? req.input : [];
    const answered = items.some((it) => it.type === 'function_call_result');
    const output = answered
      ? [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'done' }] }]
      : [{ type: 'function_call', callId: 'call_1', name: 'erase', status: 'completed',
           arguments: JSON.stringify({ table: 'orders' }) }];
    return { usage: new Usage(), output, responseId: undefined };
  },
  // eslint-disable-next-line require-yield
  async *getStreamedResponse() {
    throw new Error('not streamed');
  },
};

let runs = 0;
const erase = tool({
  name: 'erase',
  description: 'Erase the rows of a table.',
  parameters: z.object({ table: z.string() }),
  needsApproval: true,
  execute: async ({ table }) => `erased ${table} (run ${++runs})`,
});
const agent = new Agent({ name: 'ops', instructions: 'Do what is asked.', tools: [erase] });
const runner = new Runner({ modelProvider: { getModel: () => model }, tracingDisabled: true });

async function redisCPU(r) {
  const info = await r.info('cpu');
  const num = (k) => Number.parseFloat((info.match(new RegExp(`${k}:([0-9.]+)`)) || [])[1] || '0');
  return num('used_cpu_sys') + num('used_cpu_user');
}

function pct(sorted, p) {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function main() {
  const f = flags(process.argv.slice(2));
  const r = createClient({ url: f.redis });
  r.on('error', (err) => { throw err; });
  await r.connect();
  const prefix = `hitlbot-peerbench:${process.pid}:${Date.now()}:`;
  const lat = [];
  let errors = 0;
  let next = 0;

  async function conversation(i) {
    const first = await runner.run(agent, `erase orders (${i})`);
    if (first.interruptions.length !== 1) throw new Error(`conversation ${i}: ${first.interruptions.length} interruptions`);
    const key = prefix + i;
    await r.set(key, first.state.toString(), { PX: 300000 });
    const t0 = process.hrtime.bigint();
    const state = await RunState.fromString(agent, await r.get(key));
    for (const it of state.getInterruptions()) state.approve(it);
    const done = await runner.run(agent, state);
    lat.push(Number(process.hrtime.bigint() - t0) / 1e6);
    if (done.finalOutput !== 'done') throw new Error(`conversation ${i}: answer ${JSON.stringify(done.finalOutput)}`);
  }
  async function worker() {
    while (next < f.n) {
      const i = next++;
      try {
        await conversation(i);
      } catch (err) {
        errors++;
        if (errors === 1) console.error(String(err && err.stack || err));
      }
    }
  }

  // One conversation first, unmeasured, as bot bench warms its store.
  await conversation(-1);
  runs = 0;
  lat.length = 0;
  const redis0 = await redisCPU(r);
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  await Promise.all(Array.from({ length: Math.min(f.c, f.n) }, worker));
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  const redis1 = await redisCPU(r);
  lat.sort((a, b) => a - b);
  for await (const keys of r.scanIterator({ MATCH: prefix + '*', COUNT: 1000 })) {
    if (keys.length) await r.del(keys);
  }
  await r.quit();
  const round = (x) => Math.round(x * 1000) / 1000;
  console.log(JSON.stringify({
    mode: 'peer-openai-agents',
    store: 'redis',
    n: f.n,
    c: f.c,
    tool_runs: runs,
    seconds,
    round_trips_per_sec: f.n / seconds,
    p50_ms: round(pct(lat, 50)),
    p99_ms: round(pct(lat, 99)),
    redis_round_trips_per_approval: 2,
    process_cpu_us_per_approval: round((cpu.user + cpu.system) / f.n),
    redis_cpu_us_per_approval: round(((redis1 - redis0) * 1e6) / f.n),
    errors,
  }));
  if (errors > 0 || runs !== f.n) process.exit(1);
}

main().catch((err) => {
  console.error(String(err && err.stack || err));
  process.exit(1);
});
