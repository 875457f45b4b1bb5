import { render } from 'preact';
import { App } from './app.js';
import { SessionGate } from './session.js';
import './styles.css';

render(
  <SessionGate>
    <App />
  </SessionGate>,
  document.getElementById('app')!,
);
