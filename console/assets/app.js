// The console's entry point: the key field, the tabs, and the views.
import { startKey } from './key.js';
import { startFleet } from './fleet.js';
import { startChat } from './chat.js';
import { startTasks } from './tasks.js';
import { startRaw } from './raw.js';

const $ = (id) => document.getElementById(id);

const raw = startRaw({
  form: $('raw-form'), agent: $('raw-agent'), version: $('raw-version'), body: $('raw-body'),
  send: $('raw-send'), out: $('raw-out'), status: $('raw-status'),
});
const chat = startChat({
  form: $('chat-form'), agent: $('chat-agent'), version: $('chat-version'), input: $('chat-input'),
  files: $('chat-files'), send: $('chat-send'), reset: $('chat-new'), log: $('chat-log'),
}, (agent, version, body) => {
  raw.edit(agent, version, body);
  show('raw');
});
const tasks = startTasks({
  form: $('tasks-filter'), agent: $('tasks-agent'), state: $('tasks-state'), context: $('tasks-context'),
  size: $('tasks-size'), status: $('tasks-status'), body: $('tasks-body'), page: $('tasks-page'),
  newer: $('tasks-newer'), older: $('tasks-older'),
  detail: $('task-detail'), detailTitle: $('task-title'), detailBody: $('task-body'), close: $('task-close'),
});
const fleet = startFleet({ body: $('fleet-body'), state: $('fleet-state') }, (names) => {
  chat.setAgents(names);
  tasks.setAgents(names);
  raw.setAgents(names);
});
startKey({ form: $('key-form'), input: $('key-input'), forget: $('key-forget'), state: $('key-state') }, () => {
  fleet.refresh();
  tasks.refresh();
});

const views = ['fleet', 'tasks', 'chat', 'raw'];
function show(view) {
  for (const v of views) {
    $('view-' + v).hidden = v !== view;
    $('tab-' + v).setAttribute('aria-pressed', String(v === view));
  }
  tasks.show(view === 'tasks');
}
for (const v of views) $('tab-' + v).addEventListener('click', () => show(v));

fleet.refresh();
