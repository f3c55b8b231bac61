// LangGraph.js's ten-step planning chain, the baseline of
// BenchmarkLongchain (cmd/vibe/bench_test.go): a node per step, in a line,
// each asking the model for its step's JSON schema (the same instruction
// files Vibe compiles: compile/testdata/longchain/instructions) with the
// conversation so far as message history — the prompt, then each earlier
// step's request and answer — the way a LangGraph.js chain keeps its
// state in MessagesAnnotation.
//
//   node longchain.mjs MODEL_URL INSTRUCTIONS_DIR PROMPT
//
// It prints {"ms": wall time of the graph, "steps": n} on stdout.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { ChatOpenAI } from "@langchain/openai";

const [modelURL, dir, prompt] = process.argv.slice(2);
const steps = ["FrameProblem", "GatherFacts", "ListOptions", "WeighOptions", "ChooseApproach", "PlanSteps", "EstimateCost", "IdentifyRisks", "MitigateRisks", "WriteSummary"];
const base = new ChatOpenAI({ model: "test-model", apiKey: "k", configuration: { baseURL: modelURL }, maxRetries: 0 });

let graph = new StateGraph(MessagesAnnotation);
let prev = START;
for (const name of steps) {
  const schema = JSON.parse(readFileSync(join(dir, name + ".json"), "utf8"));
  const model = base.withStructuredOutput(schema, { name, method: "jsonSchema" });
  graph = graph.addNode(name, async (state) => {
    const ask = { role: "user", content: `Now the step ${name}: ${schema.description}` };
    const out = await model.invoke([...state.messages, ask]);
    return { messages: [ask, { role: "assistant", content: JSON.stringify(out) }] };
  });
  graph = graph.addEdge(prev, name);
  prev = name;
}
const app = graph.addEdge(prev, END).compile();

const start = performance.now();
const state = await app.invoke({ messages: [{ role: "user", content: prompt }] }, { recursionLimit: 50 });
console.log(JSON.stringify({ ms: performance.now() - start, steps: (state.messages.length - 1) / 2 }));
