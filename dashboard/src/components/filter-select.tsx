/** One filter of a log: a labelled select whose empty option means "all". `optionLabel` words an option's value. */
export function FilterSelect({ label, value, all, options, optionLabel = (option) => option, onChange }: { label: string; value: string; all: string; options: string[]; optionLabel?(option: string): string; onChange(value: string): void }) {
  return (
    <label>
      {label}
      <select value={value} onChange={(event) => onChange((event.target as HTMLSelectElement).value)}>
        <option value="">{all}</option>
        {options.map((option) => (
          <option key={option} value={option}>
            {optionLabel(option)}
          </option>
        ))}
      </select>
    </label>
  );
}
