import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { contentWords, lexicallyCompatible, stem, textsLexicallyCompatible as compatible } from '../../src/cache/lexical-guard.js';

interface LabelledPair {
  a: string;
  b: string;
  same: boolean;
  kind: string;
}

const calibration = JSON.parse(readFileSync(new URL('../fixtures/cache-calibration.json', import.meta.url), 'utf8')) as LabelledPair[];

/** Pairs that differ only in word order; the guard ignores order (documented limit), so they pass it. */
const KNOWN_ROLE_SWAPS = ['Who did Brutus betray?', 'Does Google own YouTube?'];

describe('contentWords', () => {
  it('drops stopwords and request fillers, lower-cases, strips possessives and light suffixes', () => {
    expect([...contentWords("Could you please tell me France's capital city?").words]).toEqual(['franc', 'capital', 'citi']);
    expect([...contentWords('What is the capital of France?').words]).toEqual(['capital', 'franc']);
  });

  it('keeps names with digits and symbols whole', () => {
    expect([...contentWords('gpt-4o vs gpt-4 for C++ and C# and node.js, 2FA').words]).toEqual(
      expect.arrayContaining(['gpt-4o', 'gpt-4', 'c++', 'c#', 'node.j', '2fa']),
    );
  });

  it("reads words that name Object's methods as words, not as number words or particles", () => {
    const read = contentWords('constructor toString valueOf hasOwnProperty');
    expect([...read.numbers]).toEqual([]);
    expect([...read.particles]).toEqual([]);
    expect(read.words.size).toBe(4);
    expect(compatible('What does a constructor do in Java?', 'What does a destructor do in Java?')).toBe(false);
  });

  it('collects numbers, written in digits or words', () => {
    expect([...contentWords('top five movies of 2020').numbers].sort()).toEqual(['2020', '5']);
    expect([...contentWords('Python 3.11, 1,000 rows').numbers].sort()).toEqual(['1000', '3.11']);
  });

  it('notices negation, including contractions', () => {
    expect(contentWords("Why doesn't my code work?").negated).toBe(true);
    expect(contentWords("I can't log in").negated).toBe(true);
    expect(contentWords('Why does my code work?').negated).toBe(false);
  });

  it('marks the word after to/from/than with its direction', () => {
    expect(contentWords('convert USD to EUR').words.has('to:eur')).toBe(true);
    // Nothing meaningful before "to": not a direction.
    expect(contentWords('how to enable 2FA').words.has('to:enabl')).toBe(false);
    expect(contentWords('the best way to learn SQL').words.has('to:learn')).toBe(false);
  });
});

describe('stem', () => {
  it('brings inflections of a word to one stem', () => {
    expect(stem('cities')).toBe(stem('city'));
    expect(stem('movies')).toBe(stem('movie'));
    expect(stem('enabling')).toBe(stem('enable'));
    expect(stem('enabled')).toBe(stem('enable'));
    expect(stem('stopped')).toBe(stem('stop'));
    expect(stem('boxes')).toBe(stem('box'));
    expect(stem('languages')).toBe(stem('language'));
  });

  it('leaves names with digits and short words alone', () => {
    expect(stem('2fa')).toBe('2fa');
    expect(stem('tokens')).toBe('token');
    expect(stem('status')).toBe('status');
    expect(stem('bus')).toBe('bus');
  });
});

describe('lexicallyCompatible', () => {
  it('accepts paraphrases that only reword or add generic words', () => {
    expect(compatible('What is the capital of France?', "Tell me France's capital city")).toBe(true);
    expect(compatible('How do I reverse a list in Python?', 'How can I reverse a Python list?')).toBe(true);
    expect(compatible("What's the best way to learn SQL?", 'How should I learn SQL?')).toBe(true);
    expect(compatible('Translate "good morning" into Spanish', 'Translate "good morning" to Spanish')).toBe(true);
    expect(compatible('What is the difference between Python and Java?', 'Difference between Java and Python?')).toBe(true);
  });

  it('rejects opposite meanings (substituted words)', () => {
    expect(compatible('how do I enable 2FA', 'how do I disable 2FA')).toBe(false);
    expect(compatible('How do I increase the font size?', 'How do I decrease the font size?')).toBe(false);
    expect(compatible('How do I add a user to a group?', 'How do I remove a user from a group?')).toBe(false);
  });

  it('rejects flipped particles', () => {
    expect(compatible('How do I turn on dark mode?', 'How do I turn off dark mode?')).toBe(false);
    expect(compatible('How do I zoom in on a Mac?', 'How do I zoom out on a Mac?')).toBe(false);
  });

  it('rejects a different negation', () => {
    expect(compatible('Why does my code work?', "Why doesn't my code work?")).toBe(false);
    expect(compatible('Can I take ibuprofen with alcohol?', 'Can I take ibuprofen without alcohol?')).toBe(false);
  });

  it('rejects other entities: countries, languages, products', () => {
    expect(compatible('What is the capital of France?', 'What is the capital of Germany?')).toBe(false);
    expect(compatible('How do I read a file in Python?', 'How do I read a file in Rust?')).toBe(false);
    expect(compatible('How do I declare an array in C?', 'How do I declare an array in C++?')).toBe(false);
    expect(compatible('Context window of gpt-4o?', 'Context window of gpt-4o-mini?')).toBe(false);
  });

  it('rejects a question narrowed by an added word', () => {
    expect(compatible('How do I enable 2FA?', 'How do I enable 2FA on GitHub?')).toBe(false);
    expect(compatible('How do I cook rice?', 'How do I cook rice in a rice cooker?')).toBe(false);
  });

  it('rejects different numbers, in digits or words', () => {
    expect(compatible('What are the top 5 programming languages?', 'What are the top 10 programming languages?')).toBe(false);
    expect(compatible("What's new in Python 3.11?", "What's new in Python 3.12?")).toBe(false);
    expect(compatible('Give me five tips for sleep', 'Give me 5 tips for sleep')).toBe(true);
    expect(compatible('What was the first World War about?', 'What was the second World War about?')).toBe(false);
  });

  it('rejects reversed directions', () => {
    expect(compatible('Convert 100 USD to EUR', 'Convert 100 EUR to USD')).toBe(false);
    expect(compatible('Translate from English to French', 'Translate from French to English')).toBe(false);
    expect(compatible('Is Java faster than Python?', 'Is Python faster than Java?')).toBe(false);
  });

  it('rejects texts without content words (greetings, bare "why?")', () => {
    expect(compatible('Hi!', 'Thanks!')).toBe(false);
    expect(compatible('Why?', 'Why?')).toBe(false);
  });

  it('compares follow-ups by their whole conversation', () => {
    const history = (first: string, answer: string, followUp: string) => `user: ${first}\nassistant: ${answer}\nuser: ${followUp}`;
    const france = history('What is the capital of France?', 'Paris.', 'And its population?');
    expect(compatible(france, history('What is the capital of Germany?', 'Berlin.', 'And its population?'))).toBe(false);
    expect(compatible(france, history('What is the capital of France?', 'Paris.', "What's its population?"))).toBe(true);
    expect(compatible(france, history('What is the capital of France?', 'Paris.', 'And its area?'))).toBe(false);
  });

  it('reads the words of every script, not only ASCII ones (a question in Russian or Japanese is not just its Latin names)', () => {
    expect(compatible('Как установить Python 3.12 на Windows?', 'Как удалить Python 3.12 на Windows?')).toBe(false);
    expect(compatible('Сколько стоит iPhone 15?', 'Когда вышел iPhone 15?')).toBe(false);
    expect(compatible('iPhone 15 多少钱?', 'iPhone 15 什么时候发布?')).toBe(false);
    expect(compatible('Windows 11でPythonをインストールする方法', 'Windows 11でPythonをアンインストールする方法')).toBe(false);
    expect(compatible('Quelle est la capitale de la Côte d’Ivoire ?', 'Quelle est la capitale de la Côte-Nord ?')).toBe(false);
    expect(compatible('नमस्ते दुनिया Python', 'अलविदा दुनिया Python')).toBe(false);
    // The same words are still the same question, in any order.
    expect(compatible('Как установить Python на Windows?', 'Python на Windows: как установить?')).toBe(true);
    expect(compatible('Was kostet das Café?', 'Was kostet das Café')).toBe(true);
  });

  it('rejects math and code that differ in an operator or a sign', () => {
    expect(compatible('What is 7 * 8?', 'What is 7 + 8?')).toBe(false);
    expect(compatible('Is 3 > 2?', 'Is 3 < 2?')).toBe(false);
    expect(compatible('Solve 2x + 3 = 7', 'Solve 2x - 3 = 7')).toBe(false);
    expect(compatible('Simplify x^2 + 2x + 1', 'Simplify x^2 - 2x + 1')).toBe(false);
    expect(compatible('Is x != null true when x is 0?', 'Is x == null true when x is 0?')).toBe(false);
    expect(compatible('Is 0.1 + 0.2 == 0.3 in JavaScript?', 'Is 0.1 + 0.2 === 0.3 in JavaScript?')).toBe(false);
    expect(compatible('What does the Python operator // do?', 'What does the Python operator % do?')).toBe(false);
    expect(compatible('What is -5 squared?', 'What is 5 squared?')).toBe(false);
    expect(compatible('What is 5! in math?', 'What is 5 in math?')).toBe(false);
    expect(compatible('What is 10 - 3?', 'What is 3 - 10?')).toBe(false);
    expect(compatible('Is 3 > 2?', 'Is 2 > 3?')).toBe(false);
    expect(compatible('Simplify x - y', 'Simplify y - x')).toBe(false);
    expect(compatible('What is 15% of 200?', "What's 15% of 200?")).toBe(true);
    // The same expression reworded is the same question; an exclamation mark is not an operator.
    expect(compatible('What is 7 * 8?', 'Tell me 7 * 8')).toBe(true);
    expect(compatible('How do I enable two-factor authentication on my account!', 'How do I enable two-factor authentication on my account?')).toBe(true);
  });

  it('rejects a question asking who, when, where or why for one asking another of them', () => {
    expect(compatible('Where was Albert Einstein born?', 'When was Albert Einstein born?')).toBe(false);
    expect(compatible('When was the Eiffel Tower built?', 'Why was the Eiffel Tower built?')).toBe(false);
    expect(compatible('How did the Roman Empire fall?', 'Why did the Roman Empire fall?')).toBe(false);
    expect(compatible('Who invented the telephone?', 'When was the telephone invented?')).toBe(false);
    // What, which and how word the same question many ways; whom is who.
    expect(compatible('Where was Albert Einstein born?', 'Where was Albert Einstein actually born?')).toBe(true);
    expect(compatible('Whom did Caesar appoint as consul?', 'Who did Caesar appoint as consul?')).toBe(true);
    expect(compatible('What is the capital of France?', 'Which city is the capital of France?')).toBe(true);
  });

  it('reads a generic word written capitalised inside a sentence as part of a name (Mexico City, Good Friday)', () => {
    expect(compatible("What's the population of Mexico City?", "What's the population of Mexico?")).toBe(false);
    expect(compatible('Is the bank open on Good Friday?', 'Is the bank open on Friday?')).toBe(false);
    expect(compatible('How big is New York City?', 'How big is New York?')).toBe(false);
    // Lower-case, or first in a sentence, it is still a filler.
    expect(compatible("Could you please tell me France's capital city?", 'What is the capital of France?')).toBe(true);
    expect(compatible('Best way to learn SQL?', 'How to learn SQL?')).toBe(true);
    expect(compatible('I want to learn SQL. Best way?', 'I want to learn SQL. Way?')).toBe(true);
    expect(compatible('WHAT IS THE CAPITAL OF FRANCE?', 'What is the capital of France?')).toBe(true);
  });

  it('works on precomputed content words', () => {
    const cached = contentWords('How do I delete a branch in git?');
    expect(lexicallyCompatible(cached, contentWords('How to delete a git branch'))).toBe(true);
    expect(lexicallyCompatible(cached, contentWords('How to create a git branch'))).toBe(false);
  });
});

describe('on the calibration set (test/fixtures/cache-calibration.json)', () => {
  it('has at least 150 labelled pairs with every hard kind well represented', () => {
    expect(calibration.length).toBeGreaterThanOrEqual(150);
    const count = (kind: string) => calibration.filter((pair) => pair.kind === kind).length;
    for (const kind of ['opposite', 'other-entity', 'other-number']) expect(count(kind)).toBeGreaterThanOrEqual(20);
    expect(count('follow-up')).toBeGreaterThanOrEqual(20);
  });

  it('rejects every pair labelled different, except word-order role swaps', () => {
    const passed = calibration.filter((pair) => !pair.same && compatible(pair.a, pair.b)).map((pair) => pair.a);
    expect(passed.sort()).toEqual([...KNOWN_ROLE_SWAPS].sort());
  });

  it('accepts most pairs labelled same', () => {
    const same = calibration.filter((pair) => pair.same);
    const accepted = same.filter((pair) => compatible(pair.a, pair.b));
    expect(accepted.length / same.length).toBeGreaterThan(0.8);
  });
});
