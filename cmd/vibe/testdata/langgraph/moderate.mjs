// LangGraph.js map-reduce over comments, the baseline of BenchmarkLangGraph
// (cmd/vibe/bench_test.go): a Send per comment to a node that asks the model
// for the same two steps as the moderate process (assess, decide) with the
// same JSON schema, then POSTs the decision to the record action with the
// comment's idempotency key, as Vibe's HTTP action does.
//
//   node moderate.mjs MODEL_URL ACTION_URL ITEMS.jsonl CONCURRENCY
//
// It prints {"ms": wall time of the graph, "results": n} on stdout.
import { readFileSync } from "node:fs";
import { Annotation, END, START, Send, StateGraph } from "@langchain/langgraph";
import { ChatOpenAI } from "@langchain/openai";

const [modelURL, actionURL, itemsFile, concurrency] = process.argv.slice(2);
const comments = readFileSync(itemsFile, "utf8").split("\n").filter((l) => l.trim() !== "").map((l) => JSON.parse(l));

const schema = {
  type: "object",
  properties: {
    assess: { type: "object", properties: { sentiment: { type: "string", enum: ["positive", "negative"] } }, required: ["sentiment"] },
    decide: { type: "object", properties: { decision: { type: "string", enum: ["publish", "hide"] } }, required: ["decision"] },
  },
  required: ["assess", "decide"],
};
const model = new ChatOpenAI({ model: "test-model", apiKey: "k", configuration: { baseURL: modelURL }, maxRetries: 0 })
  .withStructuredOutput(schema, { name: "moderate", method: "jsonSchema" });

const State = Annotation.Root({
  comments: Annotation(),
  results: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }),
});

const graph = new StateGraph(State)
  .addNode("moderate", async ({ comment, line }) => {
    const out = await model.invoke([{ role: "user", content: comment }]);
    const res = await fetch(actionURL, {
      method: "POST",
      headers: { "Content-Type": "application/json", "Idempotency-Key": `langgraph:${line}` },
      body: JSON.stringify({ decide: out.decide }),
    });
    if (!res.ok) throw new Error(`record: ${res.status}`);
    return { results: [{ line, ...out }] };
  })
  .addConditionalEdges(START, (s) => s.comments.map((comment, i) => new Send("moderate", { comment, line: i + 1 })))
  .addEdge("moderate", END)
  .compile();

const start = performance.now();
const state = await graph.invoke({ comments }, { maxConcurrency: Number(concurrency), recursionLimit: 10 });
console.log(JSON.stringify({ ms: performance.now() - start, results: state.results.length }));
