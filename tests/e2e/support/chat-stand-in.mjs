// A stand-in for an OpenAI-compatible chat-completions endpoint, for the E2E specs of sampling: no
// model can run on the test machines. It checks what it receives (the path, the key, the model, the
// messages, max_tokens) and answers a request that is wrong with a 400 naming what was wrong, so a
// wrong request fails the test instead of passing with a canned reply.

import { createServer } from 'node:http';

/**
 * Listens on a free loopback port. `expect` is `{ key, model, maxTokens, system, userIncludes }`;
 * `reply` the text the "model" answers. Returns `{ baseUrl, requests, problems, close }`: every
 * request body received, and what was wrong with each refused one.
 */
export async function startChatStandIn({ expect, reply }) {
  const requests = [];
  const problems = [];
  const server = createServer((req, res) => {
    const chunks = [];
    let size = 0;
    req.on('data', (c) => {
      size += c.length;
      if (size <= 1 << 20) chunks.push(c);
    });
    req.on('end', () => {
      const wrong = [];
      let body = null;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        wrong.push('the body is not JSON');
      }
      requests.push({ method: req.method, url: req.url, authorization: req.headers.authorization ?? null, body });
      if (req.method !== 'POST' || req.url !== '/v1/chat/completions') wrong.push(`${req.method} ${req.url}`);
      if (req.headers.authorization !== `Bearer ${expect.key}`) wrong.push('the key is not the one configured');
      if (body) {
        if (body.model !== expect.model) wrong.push(`model ${JSON.stringify(body.model)}`);
        if (body.max_tokens !== expect.maxTokens) wrong.push(`max_tokens ${JSON.stringify(body.max_tokens)}`);
        const messages = Array.isArray(body.messages) ? body.messages : [];
        const system = messages.find((m) => m.role === 'system');
        if (system?.content !== expect.system) wrong.push(`system ${JSON.stringify(system?.content)}`);
        const user = messages.find((m) => m.role === 'user');
        if (typeof user?.content !== 'string' || !user.content.includes(expect.userIncludes)) {
          wrong.push(`user message ${JSON.stringify(user?.content)}`);
        }
      }
      if (wrong.length > 0) {
        problems.push(wrong);
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `stand-in refused: ${wrong.join('; ')}` } }));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: `chatcmpl-${requests.length}`,
          object: 'chat.completion',
          model: expect.model,
          choices: [{ index: 0, message: { role: 'assistant', content: reply }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 42, completion_tokens: 7, total_tokens: 49 },
        }),
      );
    });
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address();
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    problems,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
